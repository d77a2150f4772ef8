//! The checks of the fields of issues and labels.

use super::changes::check_title;
use super::labels::{check_color, check_label_name};

#[test]
fn colours_and_names() {
    assert_eq!(check_color("#E11D21").unwrap(), "e11d21");
    assert_eq!(check_color("00aabb").unwrap(), "00aabb");
    assert!(check_color("red").is_err());
    assert!(check_label_name("  ").is_err());
    assert!(check_title("").is_err());
}
