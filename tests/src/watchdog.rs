//! Peers that do not outlive the test binary.
//!
//! A peer shared by the tests of one binary lives in a static, and Rust
//! never drops statics: its `Drop` would never run, and the peer would be
//! left running after the test binary exits. So such a peer is started
//! through a watchdog `sh`: the shell forks a subshell that checks once a
//! second that the test binary (the shell's parent) is alive, then `exec`s
//! the peer, which so keeps the shell's pid (the `Child` is the peer
//! itself, and killing it kills the peer). When the test binary is gone,
//! the subshell kills the peer and removes its temp dir, within a second;
//! when the peer is gone, the subshell exits. Nothing Linux-only
//! (`prctl(PR_SET_PDEATHSIG)`) and no `unsafe` (`pre_exec`) is needed.

use std::path::Path;
use std::process::Command;

/// The watchdog: `$1` is the temp dir, the rest the peer's command line.
/// `$$` is this shell's pid, which `exec` hands to the peer; in the
/// subshell it is still the outer shell's (POSIX).
const WATCHDOG: &str = r#"parent=$PPID
me=$$
dir=$1
shift
(
  while kill -0 "$parent" 2>/dev/null; do
    kill -0 "$me" 2>/dev/null || exit 0
    sleep 1
  done
  kill "$me" 2>/dev/null
  rm -rf "$dir"
) &
exec "$@"
"#;

/// A command that runs `program` (add its arguments) under the watchdog,
/// removing `dir` when the test binary is gone. `name` is the shell's
/// `$0`, seen in `ps`.
pub fn command(name: &str, dir: &Path, program: &Path) -> Command {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(WATCHDOG)
        .arg(name)
        .arg(dir)
        .arg(program);
    command
}
