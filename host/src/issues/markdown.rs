//! Issue and comment bodies rendered from Markdown to HTML a page can hold.

/// Markdown to HTML that is safe to put in a page: pulldown-cmark renders,
/// ammonia keeps only harmless tags and attributes (no scripts, no event
/// handlers, no `javascript:` URLs), and links get `rel="noopener
/// noreferrer nofollow"`.
pub fn render_markdown(text: &str) -> String {
    let parser = pulldown_cmark::Parser::new_ext(text, pulldown_cmark::Options::all());
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, parser);
    ammonia::Builder::default()
        .link_rel(Some("noopener noreferrer nofollow"))
        .clean(&html)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Markdown nested as deep as a body may be rendered on a stack no
    /// larger than a worker's (2 MiB, tokio's default; the server gives 8).
    #[test]
    fn deep_markdown_renders_within_a_worker_stack() {
        let deep = 10_000;
        let inputs = [
            format!("{}x", "> ".repeat(deep)),
            format!("{}x{}", "<div>".repeat(deep), "</div>".repeat(deep)),
            format!("{}x{}", "[".repeat(deep), "](u)".repeat(deep)),
            format!("{}x{}", "*".repeat(deep), "*".repeat(deep)),
            format!("{}x{}", "<em>".repeat(deep), "</em>".repeat(deep)),
            (0..200)
                .map(|i| format!("{}- x\n", "  ".repeat(i)))
                .collect::<String>(),
        ];
        for input in inputs {
            let rendered = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || render_markdown(&input))
                .expect("a thread")
                .join()
                .expect("rendered");
            assert!(rendered.contains('x'));
        }
    }

    #[test]
    fn markdown_renders_inert() {
        for (input, banned) in [
            ("<script>alert(1)</script>", "<script"),
            ("[x](javascript:alert(1))", "javascript:"),
            ("<img src=x onerror=alert(1)>", "onerror"),
            ("<a href=\"#\" onclick=\"alert(1)\">x</a>", "onclick"),
            ("<iframe src=\"https://example.com\"></iframe>", "<iframe"),
            ("<svg><script>alert(1)</script></svg>", "<script"),
        ] {
            let html = render_markdown(input);
            assert!(!html.to_lowercase().contains(banned), "{input} → {html}");
        }
        let html = render_markdown("**bold** and [a link](https://example.com)");
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(
            html.contains("href=\"https://example.com\"") && html.contains("noopener"),
            "{html}"
        );
    }
}
