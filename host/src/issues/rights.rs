//! What a caller may do with issues at their access level.

use super::{Comment, Issue};
use crate::roles::Level;

/// What a caller at `level` may do with issues (spec: Roles): Read views
/// and comments; Write creates, assigns, labels and closes any issue; the
/// author edits and closes their own; Admin (and owners) manage labels,
/// lock and delete, and alone comment on a locked issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rights {
    level: Level,
    /// The caller's user id; `None` when anonymous.
    user: Option<i64>,
    signed_in: bool,
}

impl Rights {
    /// The rights of the user `user` (an id; `None` when anonymous) at
    /// `level` on the issue's repository.
    pub fn new(level: Level, user: Option<i64>) -> Rights {
        Rights {
            level,
            user,
            signed_in: user.is_some(),
        }
    }

    pub fn view(&self) -> bool {
        self.level >= Level::Read
    }

    pub fn comment(&self, issue: &Issue) -> bool {
        self.signed_in
            && self.level >= Level::Read
            && (!issue.is_locked || self.level >= Level::Admin)
    }

    pub fn create(&self) -> bool {
        self.signed_in && self.level >= Level::Write
    }

    /// Close, reopen, edit the title and body.
    pub fn edit(&self, issue: &Issue) -> bool {
        self.signed_in
            && (self.level >= Level::Write
                || (self.level >= Level::Read && self.user == Some(issue.author_id)))
    }

    /// Assign and label.
    pub fn triage(&self) -> bool {
        self.signed_in && self.level >= Level::Write
    }

    /// Create, change and delete labels; lock; delete issues.
    pub fn manage(&self) -> bool {
        self.signed_in && self.level >= Level::Admin
    }

    /// Edit or delete a comment: its author, or an admin.
    pub fn edit_comment(&self, comment: &Comment) -> bool {
        self.signed_in
            && self.level >= Level::Read
            && (self.level >= Level::Admin || self.user == Some(comment.author_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_follow_the_roles_table() {
        let (author, other) = (Some(7), Some(8));
        let issue = |locked| Issue {
            id: 1,
            repo_id: 1,
            number: 1,
            author_id: 7,
            author_login: "author".into(),
            title: "t".into(),
            body: String::new(),
            is_closed: false,
            is_locked: locked,
            created: 0,
            updated: 0,
            closed: None,
            labels: vec![],
            assignees: vec![],
            comments: 0,
            is_pull: false,
            merged: None,
        };
        let read = Rights::new(Level::Read, other);
        assert!(read.view() && read.comment(&issue(false)) && !read.create());
        assert!(!read.edit(&issue(false)), "another's issue");
        assert!(Rights::new(Level::Read, author).edit(&issue(false)));
        assert!(!read.comment(&issue(true)), "locked");
        let write = Rights::new(Level::Write, other);
        assert!(write.create() && write.triage() && write.edit(&issue(false)));
        assert!(!write.manage() && !write.comment(&issue(true)));
        let admin = Rights::new(Level::Admin, other);
        assert!(admin.manage() && admin.comment(&issue(true)));
        let anonymous = Rights::new(Level::Read, None);
        assert!(anonymous.view() && !anonymous.comment(&issue(false)));
        assert!(!Rights::new(Level::None, other).view());
    }
}
