//! Depth bounds on outside input, checked before any parse that could
//! recurse on it. A size cap does not bound depth: 27 KB of `<a>` nested
//! 3 000 deep is small, and a parser that recurses once per level would
//! overflow a worker's stack and abort the whole process. Each check here
//! is a single pass over the bytes with a counter, so its own cost and
//! stack are flat whatever the input.
//!
//! The bounds are far above what any real document of its kind needs and
//! are documented in docs/operating.md ("Limits on outside input").

/// The deepest element nesting a SAML response or metadata document may
/// have. A signed, encrypted response is about ten levels deep.
pub const MAX_XML_DEPTH: usize = 64;

/// The deepest array and object nesting a JSON request body may have.
/// Every body the API takes is two or three levels deep.
pub const MAX_JSON_DEPTH: usize = 64;

/// Input nested deeper than its bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("it is nested deeper than {max} levels")]
pub struct TooDeep {
    pub max: usize,
}

/// Refuses XML whose elements nest deeper than `max`. Tags are counted as
/// the text reads (`<x …>` opens, `</x>` closes, `<x …/>` does neither),
/// skipping comments, CDATA sections, processing instructions and
/// declarations, and `>` inside quoted attribute values. On a document that
/// is not well-formed the count may be off, but never low enough to let a
/// deep one through: the parse that follows refuses what is malformed.
pub fn xml(text: &str, max: usize) -> Result<(), TooDeep> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(offset) = bytes[i..].iter().position(|&b| b == b'<') {
        i += offset + 1;
        let start = i;
        let rest = &bytes[start..];
        let skip_to = |end: &[u8]| {
            rest.windows(end.len())
                .position(|w| w == end)
                .map_or(bytes.len(), |p| start + p + end.len())
        };
        match rest.first() {
            Some(b'/') => {
                depth = depth.saturating_sub(1);
                i = skip_to(b">");
            }
            Some(b'?') => i = skip_to(b"?>"),
            Some(b'!') if rest.starts_with(b"!--") => i = skip_to(b"-->"),
            Some(b'!') if rest.starts_with(b"![CDATA[") => i = skip_to(b"]]>"),
            Some(b'!') => i = skip_to(b">"),
            Some(_) => {
                // A start tag: to its `>`, outside quoted values.
                let mut quote = None;
                let mut end = bytes.len();
                for (k, &b) in rest.iter().enumerate() {
                    match (quote, b) {
                        (None, b'"' | b'\'') => quote = Some(b),
                        (Some(q), _) if b == q => quote = None,
                        (None, b'>') => {
                            end = start + k;
                            break;
                        }
                        _ => {}
                    }
                }
                let self_closing = end > start && bytes[end - 1] == b'/';
                if !self_closing {
                    depth += 1;
                    if depth > max {
                        return Err(TooDeep { max });
                    }
                }
                i = (end + 1).min(bytes.len());
            }
            None => break,
        }
    }
    Ok(())
}

/// Refuses JSON whose arrays and objects nest deeper than `max`, counting
/// brackets outside strings.
pub fn json(bytes: &[u8], max: usize) -> Result<(), TooDeep> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Err(TooDeep { max });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested_xml(depth: usize) -> String {
        format!("{}{}", "<a x='>'>".repeat(depth), "</a>".repeat(depth))
    }

    #[test]
    fn xml_at_the_bound_passes_and_one_over_is_refused() {
        assert_eq!(xml(&nested_xml(MAX_XML_DEPTH), MAX_XML_DEPTH), Ok(()));
        assert_eq!(
            xml(&nested_xml(MAX_XML_DEPTH + 1), MAX_XML_DEPTH),
            Err(TooDeep { max: MAX_XML_DEPTH })
        );
        assert!(xml(&nested_xml(10_000), MAX_XML_DEPTH).is_err());
    }

    #[test]
    fn xml_siblings_self_closing_tags_and_markup_do_not_count() {
        let wide = format!("<r>{}</r>", "<a><b/></a>".repeat(10_000));
        assert_eq!(xml(&wide, 3), Ok(()));
        let doc =
            "<?xml version='1.0'?><!-- <a><a><a> --><r><![CDATA[<a><a><a>]]><x y=\"/>\"/></r>";
        assert_eq!(xml(doc, 1), Ok(()));
        // An unterminated tag counts once and ends the scan.
        assert_eq!(xml("<a><b", 1), Err(TooDeep { max: 1 }));
    }

    #[test]
    fn json_at_the_bound_passes_and_one_over_is_refused() {
        let nested = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
        assert_eq!(
            json(nested(MAX_JSON_DEPTH).as_bytes(), MAX_JSON_DEPTH),
            Ok(())
        );
        assert!(json(nested(MAX_JSON_DEPTH + 1).as_bytes(), MAX_JSON_DEPTH).is_err());
        let strings = r#"{"a": "[[[[{{{{\"]]]]", "b": [{"c": 1}]}"#;
        assert_eq!(json(strings.as_bytes(), 3), Ok(()));
        assert!(json(br#"{"a": [{"b": [1]}]}"#, 3).is_err());
    }
}
