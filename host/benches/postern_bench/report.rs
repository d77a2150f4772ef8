//! The figures and how they are printed: a table, or JSON (`--json`).

use serde::Serialize;

/// What a figure is held to.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "limit")]
pub enum Goal {
    /// The ratio to the baseline is at least this.
    RatioAtLeast(f64),
    /// The ratio to the baseline is at most this.
    RatioAtMost(f64),
    /// The value itself is at most this (in its unit).
    AtMost(f64),
    /// The value itself is at least this (in its unit).
    AtLeast(f64),
    /// The value is exactly this (errors: 0).
    Exactly(f64),
}

impl Goal {
    fn text(self) -> String {
        match self {
            Goal::RatioAtLeast(x) => format!("ratio ≥ {x}"),
            Goal::RatioAtMost(x) => format!("ratio ≤ {x}"),
            Goal::AtMost(x) => format!("≤ {x}"),
            Goal::AtLeast(x) => format!("≥ {x}"),
            Goal::Exactly(x) => format!("= {x}"),
        }
    }
}

/// One line of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    pub group: &'static str,
    pub name: String,
    pub value: f64,
    pub unit: &'static str,
    /// What the value is compared with, measured in the same run.
    pub baseline_name: Option<String>,
    pub baseline: Option<f64>,
    /// value ÷ baseline.
    pub ratio: Option<f64>,
    pub goal: Option<Goal>,
    /// Whether the goal is met; `None` without a goal.
    pub met: Option<bool>,
}

impl Figure {
    /// A figure with no baseline.
    pub fn plain(
        group: &'static str,
        name: impl Into<String>,
        value: f64,
        unit: &'static str,
    ) -> Figure {
        Figure {
            group,
            name: name.into(),
            value,
            unit,
            baseline_name: None,
            baseline: None,
            ratio: None,
            goal: None,
            met: None,
        }
    }

    /// A figure against a baseline measured in the same run.
    pub fn against(
        group: &'static str,
        name: impl Into<String>,
        value: f64,
        unit: &'static str,
        baseline_name: impl Into<String>,
        baseline: f64,
    ) -> Figure {
        let mut f = Figure::plain(group, name, value, unit);
        f.baseline_name = Some(baseline_name.into());
        f.baseline = Some(baseline);
        f.ratio = Some(value / baseline);
        f
    }

    pub fn goal(mut self, goal: Goal) -> Figure {
        self.met = Some(match goal {
            Goal::RatioAtLeast(x) => self.ratio.is_some_and(|r| r >= x),
            Goal::RatioAtMost(x) => self.ratio.is_some_and(|r| r <= x),
            Goal::AtMost(x) => self.value <= x,
            Goal::AtLeast(x) => self.value >= x,
            Goal::Exactly(x) => self.value == x,
        });
        self.goal = Some(goal);
        self
    }
}

fn number(v: f64) -> String {
    if v == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The table, one line a figure, grouped as measured.
pub fn table(figures: &[Figure]) -> String {
    let rows: Vec<[String; 6]> = figures
        .iter()
        .map(|f| {
            [
                format!("{}: {}", f.group, f.name),
                format!("{} {}", number(f.value), f.unit),
                match (&f.baseline_name, f.baseline) {
                    (Some(n), Some(b)) => format!("{n}: {} {}", number(b), f.unit),
                    _ => "-".into(),
                },
                f.ratio.map_or("-".into(), |r| format!("{r:.3}")),
                f.goal.map_or("-".into(), Goal::text),
                match f.met {
                    Some(true) => "met".into(),
                    Some(false) => "NOT MET".into(),
                    None => "".into(),
                },
            ]
        })
        .collect();
    let head = [
        "figure",
        "value",
        "baseline (same run)",
        "ratio",
        "goal",
        "",
    ];
    let mut widths = head.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = line(&head.map(String::from));
    out.push('\n');
    for row in &rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}
