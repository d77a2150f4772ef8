//! Which hooks an event reaches: a hook's `events` list and its branch
//! filter.

/// The first part of the audit log's event types: `audit.sign_in.password`.
pub const AUDIT_PREFIX: &str = "audit.";

/// Whether a hook's `events` take `event_type`: the name itself, its
/// family (`repository` takes `repository.created`), or `*`. No events is
/// Gitea's default: `push` only.
pub fn subscribed(events: &[String], event_type: &str) -> bool {
    if events.is_empty() {
        return event_type == "push";
    }
    // The audit log's events reach only hooks that name them: a hook made
    // for "everything" before they existed does not start receiving every
    // sign-in.
    let audit = event_type.starts_with(AUDIT_PREFIX);
    events.iter().any(|e| {
        (e == "*" && !audit)
            || e == event_type
            || event_type
                .strip_prefix(e.as_str())
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// A branch filter's patterns: `main`, `release/*`, `{main,release/*}`.
pub(super) fn branch_patterns(filter: &str) -> Option<Vec<glob::Pattern>> {
    let inner = filter
        .trim()
        .strip_prefix('{')
        .and_then(|f| f.strip_suffix('}'))
        .unwrap_or(filter.trim());
    inner
        .split(',')
        .map(|p| glob::Pattern::new(p.trim()).ok())
        .collect()
}

/// Whether a push to `branch` passes a hook's `branch_filter` (empty or `*`
/// passes everything; events without a branch always pass).
pub fn branch_matches(filter: &str, branch: Option<&str>) -> bool {
    let (filter, Some(branch)) = (filter.trim(), branch) else {
        return true;
    };
    if filter.is_empty() || filter == "*" {
        return true;
    }
    branch_patterns(filter).is_some_and(|ps| ps.iter().any(|p| p.matches(branch)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_match_by_name_family_and_star_and_none_means_push() {
        let e = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(subscribed(&e(&["user.created"]), "user.created"));
        assert!(subscribed(&e(&["user"]), "user.deactivated"));
        assert!(!subscribed(&e(&["use"]), "user.created"));
        assert!(subscribed(&e(&["*"]), "team.member_added"));
        assert!(subscribed(&[], "push"));
        assert!(!subscribed(&[], "repository.created"));
    }

    #[test]
    fn branch_filters_are_globs_with_alternatives() {
        assert!(branch_matches("", Some("dev")));
        assert!(branch_matches("{main,release/*}", Some("release/1.0")));
        assert!(!branch_matches("{main,release/*}", Some("dev")));
        assert!(branch_matches("main", None));
    }
}
