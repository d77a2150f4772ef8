//! The levels of access a role gives on a repository (spec: Roles). A leaf
//! the domain modules share; the one check that applies them is `access`.

/// How much a principal may do on a repository, in increasing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    None,
    Read,
    Write,
    Admin,
    Owner,
}

impl Level {
    /// A collaborator permission: `read`, `write` or `admin`.
    pub fn parse_permission(s: &str) -> Option<Level> {
        match s {
            "read" => Some(Level::Read),
            "write" => Some(Level::Write),
            "admin" => Some(Level::Admin),
            _ => None,
        }
    }

    pub fn permission_name(self) -> &'static str {
        match self {
            Level::None => "none",
            Level::Read => "read",
            Level::Write => "write",
            Level::Admin => "admin",
            Level::Owner => "owner",
        }
    }
}
