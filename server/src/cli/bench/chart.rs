//! `panescan bench --svg FILE`: the report as a chart, read at a glance.
//!
//! One row per search: a bar for its median time, a mark at the raw
//! single-connection fetch of the same text (the floor: tmux cannot hand
//! the text over faster) and one at the one-tmux-process-per-pane fetch
//! (the way other servers do it). A search that a budget clamped is drawn
//! in another colour with the flags named beside it. The time axis is
//! logarithmic: the cases span two orders of magnitude.

use std::path::Path;

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use super::report::BenchReport;

/// One bar of the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartRow {
    pub label: String,
    pub median_ms: f64,
    /// The raw single-connection fetch of the same range.
    pub floor_ms: f64,
    /// One tmux process per pane, same range.
    pub process_ms: Option<f64>,
    pub clamps: Vec<String>,
}

/// The rows of a report: the matrix, then the pane cache's repeats.
fn chart_rows(r: &BenchReport) -> Vec<ChartRow> {
    let mut rows: Vec<ChartRow> = r
        .rows
        .iter()
        .map(|row| {
            let deep = row.scope == "deep";
            ChartRow {
                label: format!("{}: {}", row.scope, row.case),
                median_ms: row.median_ms,
                floor_ms: if deep {
                    r.raw_deep_ms
                } else {
                    r.raw_visible_ms
                },
                process_ms: if deep {
                    r.process_per_pane_deep_ms
                } else {
                    r.process_per_pane_visible_ms
                },
                clamps: row.clamps.clone(),
            }
        })
        .collect();
    if let Some(c) = &r.cache {
        for (what, ms) in [
            ("nothing changed", c.warm_unchanged_ms),
            ("10% of panes changed", c.warm_changed_ms),
            ("since the last, 1% of panes changed", c.since_ms),
        ] {
            rows.push(ChartRow {
                label: format!("deep, repeated ({what})"),
                median_ms: ms,
                floor_ms: r.raw_deep_ms,
                process_ms: r.process_per_pane_deep_ms,
                clamps: Vec::new(),
            });
        }
    }
    rows
}

const BAR: RGBColor = RGBColor(0x2b, 0x6c, 0xb0);
const CLAMPED: RGBColor = RGBColor(0xdd, 0x6b, 0x20);
const FLOOR: RGBColor = RGBColor(0x1a, 0x1a, 0x1a);
const PROCESS: RGBColor = RGBColor(0xc5, 0x30, 0x30);

/// Draws `rows` as an SVG document.
pub fn render(title: &str, rows: &[ChartRow]) -> Result<String, String> {
    let mut svg = String::new();
    {
        let height = 190 + 34 * rows.len() as u32;
        let root = SVGBackend::with_string(&mut svg, (1440, height)).into_drawing_area();
        let (plot, legend) = root.split_vertically(height - 60);
        let drawn = root
            .fill(&WHITE)
            .and_then(|()| draw(&plot, title, rows))
            .and_then(|()| draw_legend(&legend))
            .and_then(|()| root.present());
        drawn.map_err(|e| format!("chart: {e}"))?;
    }
    Ok(svg)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// The time axis: from half the fastest to three times the slowest.
fn time_range(rows: &[ChartRow]) -> (f64, f64) {
    let times = rows
        .iter()
        .flat_map(|r| [Some(r.median_ms), Some(r.floor_ms), r.process_ms])
        .flatten()
        .filter(|t| *t > 0.0);
    let (lo, hi) = times.fold((f64::MAX, 0.0_f64), |(lo, hi), t| (lo.min(t), hi.max(t)));
    if hi > 0.0 {
        (lo / 2.0, hi * 3.0)
    } else {
        (0.1, 10.0)
    }
}

fn draw(area: &Area<'_>, title: &str, rows: &[ChartRow]) -> DrawResult {
    let (lo, hi) = time_range(rows);
    let n = rows.len();
    // The first row at the top, as in the table.
    let slot = |i: usize| (n - 1 - i) as i32;
    let at = |i: usize| SegmentValue::CenterOf(slot(i));
    let labels: Vec<String> = rows.iter().rev().map(|r| r.label.clone()).collect();
    let notes: Vec<String> = rows.iter().rev().map(note).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(300)
        .right_y_label_area_size(400)
        .build_cartesian_2d((lo..hi).log_scale(), (0..n as i32).into_segmented())?
        .set_secondary_coord((lo..hi).log_scale(), (0..n as i32).into_segmented());
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc("median time, ms (log scale)")
        .x_labels(8)
        .light_line_style(TRANSPARENT)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_labels(n)
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(("sans-serif", 13))
        .draw()?;
    // Each row's time, its ratio to the floor and any clamp flags, on the
    // right: inside the plot they would cover marks.
    chart
        .configure_secondary_axes()
        .x_labels(0)
        .y_labels(n)
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(i) => notes.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(("sans-serif", 12))
        .draw()?;
    chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
        let colour = if r.clamps.is_empty() { BAR } else { CLAMPED };
        let (y0, y1) = (
            SegmentValue::Exact(slot(i)),
            SegmentValue::Exact(slot(i) + 1),
        );
        let mut bar = Rectangle::new([(lo, y0), (r.median_ms.max(lo), y1)], colour.filled());
        bar.set_margin(6, 6, 0, 0);
        bar
    }))?;
    chart.draw_series(
        rows.iter()
            .enumerate()
            .map(|(i, r)| Cross::new((r.floor_ms, at(i)), 7, FLOOR.stroke_width(3))),
    )?;
    chart.draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
        r.process_ms
            .map(|t| TriangleMarker::new((t, at(i)), 7, PROCESS.filled()))
    }))?;
    Ok(())
}

/// "23 ms, 2.1x floor: matching_time_clamped".
fn note(r: &ChartRow) -> String {
    let ratio = if r.floor_ms > 0.0 {
        r.median_ms / r.floor_ms
    } else {
        0.0
    };
    // Two digits for what is far under the floor (a cache hit, a budget).
    let digits = if ratio < 0.1 { 2 } else { 1 };
    let text = format!("{:.0} ms, {ratio:.digits$}x floor", r.median_ms);
    if r.clamps.is_empty() {
        return text;
    }
    // A note on failed runs keeps its first clause ("4 of 5 runs
    // failed"), not the whole error.
    let flags: Vec<&str> = r
        .clamps
        .iter()
        .map(|c| c.split(':').next().unwrap_or(c).trim())
        .collect();
    format!("{text}: {}", flags.join(", "))
}

/// The key, in a strip under the chart (inside the plot it would hide
/// marks).
fn draw_legend(area: &Area<'_>) -> DrawResult {
    let font = ("sans-serif", 13).into_font().color(&FLOOR);
    let items: [(&str, u8); 4] = [
        ("panescan search_panes through MCP", 0),
        ("the same, clamped by a budget (flags named)", 1),
        (
            "raw single-connection fetch of the same text (the floor)",
            2,
        ),
        ("one tmux process per pane, fetch only", 3),
    ];
    for (k, (text, mark)) in items.iter().enumerate() {
        let x = 330 + (k as i32 % 2) * 380;
        let y = 14 + (k as i32 / 2) * 22;
        match mark {
            0 => area.draw(&Rectangle::new([(x, y - 5), (x + 14, y + 5)], BAR.filled()))?,
            1 => area.draw(&Rectangle::new(
                [(x, y - 5), (x + 14, y + 5)],
                CLAMPED.filled(),
            ))?,
            2 => area.draw(&Cross::new((x + 7, y), 6, FLOOR.stroke_width(3)))?,
            _ => area.draw(&TriangleMarker::new((x + 7, y), 6, PROCESS.filled()))?,
        }
        area.draw(&Text::new(*text, (x + 22, y - 7), font.clone()))?;
    }
    Ok(())
}

/// Writes the chart of `report` to `path`.
pub fn write(report: &BenchReport, path: &Path) -> Result<(), String> {
    let title = format!(
        "panescan bench: {} panes x {} lines of history, median of {} runs",
        report.panes, report.lines, report.runs
    );
    let svg = render(&title, &chart_rows(report))?;
    std::fs::write(path, svg).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, median: f64, clamps: &[&str]) -> ChartRow {
        ChartRow {
            label: label.to_owned(),
            median_ms: median,
            floor_ms: 14.0,
            process_ms: Some(620.0),
            clamps: clamps.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    #[test]
    fn every_row_is_drawn_with_its_marks_and_clamps() {
        let rows = [
            row("visible: rare literal", 29.0, &[]),
            row("deep: common word", 260.0, &["matches_truncated"]),
            row(
                "deep: budget",
                21.0,
                &[
                    "matching_time_clamped",
                    "4 of 5 runs failed: tmux did not answer",
                ],
            ),
        ];
        let svg = render("test chart", &rows).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{svg}"
        );
        for r in &rows {
            assert!(svg.contains(&r.label), "{} missing", r.label);
        }
        assert!(svg.contains("matches_truncated") && svg.contains("matching_time_clamped"));
        assert!(svg.contains("test chart") && svg.contains("(the floor)"));
        assert!(svg.contains("29 ms, 2.1x floor"), "{svg}");
        assert!(
            svg.contains("260 ms, 18.6x floor: matches_truncated"),
            "{svg}"
        );
        assert!(
            svg.contains("1.5x floor: matching_time_clamped, 4 of 5 runs failed")
                && !svg.contains("did not answer"),
            "{svg}"
        );
        // Bars in two colours: one plain, two clamped, and one of each in
        // the key; one process-per-pane triangle per row and the key's.
        let rects = |c: RGBColor| {
            let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
            svg.lines()
                .filter(|l| l.starts_with("<rect") && l.contains(&fill))
                .count()
        };
        assert_eq!(rects(CLAMPED), 2 + 1);
        assert_eq!(rects(BAR), 1 + 1);
        assert_eq!(svg.matches("<polygon").count(), rows.len() + 1);
    }
}
