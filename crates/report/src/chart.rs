//! Chart geometry: scales, ticks and paths computed here as data; the HTML template draws them
//! as SVG. Keeping markup in the template and arithmetic here lets both be tested apart, and
//! needs no font files (text is laid out by the browser).

use serde::Serialize;

const WIDTH: f64 = 860.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 40.0;

/// A chart ready to draw.
#[derive(Clone, Debug, Serialize)]
pub struct Chart {
    /// Anchor and test id.
    pub id: String,
    /// Heading.
    pub title: String,
    /// Total size.
    pub width: f64,
    /// Total height.
    pub height: f64,
    /// The plot area.
    pub plot: Rect,
    /// Label of the x axis.
    pub x_label: String,
    /// Label of the y axis.
    pub y_label: String,
    /// Ticks along x, with positions in SVG units.
    pub x_ticks: Vec<Tick>,
    /// Ticks along y.
    pub y_ticks: Vec<Tick>,
    /// Lines.
    pub lines: Vec<Line>,
    /// Labelled points.
    pub dots: Vec<Dot>,
    /// Series of unlabelled marks (a scatter plot).
    pub marks: Vec<Marks>,
    /// Moments marked across the plot (a process that died), on a time axis.
    pub events: Vec<EventMark>,
    /// The x axis's range, to place marks added later.
    #[serde(skip)]
    x_range: (f64, f64),
}

/// A moment marked by a vertical line and a label.
#[derive(Clone, Debug, Serialize)]
pub struct EventMark {
    /// Position in SVG units.
    pub x: f64,
    /// What happened.
    pub label: String,
}

impl Chart {
    /// Marks moments on a chart whose x axis is time in seconds; those outside it are left out.
    pub fn mark(&mut self, events: &[(f64, String)]) {
        let (x0, x1) = self.x_range;
        let xs = Scale {
            min: x0,
            max: x1,
            from: self.plot.x,
            to: self.plot.x + self.plot.w,
        };
        self.events.extend(
            events
                .iter()
                .filter(|(t, _)| *t >= x0 && *t <= x1)
                .map(|(t, l)| EventMark {
                    x: round(xs.at(*t)),
                    label: l.clone(),
                }),
        );
    }
}

/// A series of marks: one path of many short strokes, so 10,000 points cost one SVG element
/// and about 15 bytes each rather than a `<circle>` apiece.
#[derive(Clone, Debug, Serialize)]
pub struct Marks {
    /// Legend text.
    pub name: String,
    /// Stroke colour.
    pub color: String,
    /// Drawn as crosses (failures) rather than dots.
    pub cross: bool,
    /// How many marks.
    pub count: usize,
    /// The SVG path: `M x y h0` per dot (a round cap makes it a dot), a cross per failure.
    pub path: String,
    /// Legend position.
    pub legend_y: f64,
}

/// A rectangle.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Rect {
    /// Left.
    pub x: f64,
    /// Top.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

/// A tick.
#[derive(Clone, Debug, Serialize)]
pub struct Tick {
    /// Position in SVG units.
    pub pos: f64,
    /// Text.
    pub label: String,
}

/// A line series.
#[derive(Clone, Debug, Serialize)]
pub struct Line {
    /// Legend text.
    pub name: String,
    /// Stroke colour.
    pub color: String,
    /// `x,y x,y ...` in SVG units.
    pub points: String,
    /// Legend position.
    pub legend_y: f64,
}

/// A labelled point.
#[derive(Clone, Debug, Serialize)]
pub struct Dot {
    /// Position.
    pub x: f64,
    /// Position.
    pub y: f64,
    /// Text beside it.
    pub label: String,
}

/// Colours for series, readable in print.
pub const COLORS: [&str; 5] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"];

/// A "nice" step (1, 2 or 5 times a power of ten) for about `n` ticks over `range`.
pub fn nice_step(range: f64, n: usize) -> f64 {
    if range.is_nan() || range <= 0.0 {
        return 1.0;
    }
    let raw = range / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

fn label(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

struct Scale {
    min: f64,
    max: f64,
    from: f64,
    to: f64,
}

impl Scale {
    fn at(&self, v: f64) -> f64 {
        let span = (self.max - self.min).max(f64::EPSILON);
        self.from + (v - self.min) / span * (self.to - self.from)
    }

    fn ticks(&self, step: f64) -> Vec<Tick> {
        let mut out = Vec::new();
        let mut v = (self.min / step).ceil() * step;
        while v <= self.max + step * 1e-9 && out.len() < 50 {
            out.push(Tick {
                pos: round(self.at(v)),
                label: label(v),
            });
            v += step;
        }
        out
    }
}

fn round(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// Builds a chart of series of (x, y) points.
pub fn chart(
    id: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(&str, Vec<(f64, f64)>)],
    dots: &[(f64, f64, String)],
) -> Chart {
    let plot = Rect {
        x: LEFT,
        y: TOP,
        w: WIDTH - LEFT - RIGHT,
        h: HEIGHT - TOP - BOTTOM,
    };
    let all = series
        .iter()
        .flat_map(|(_, p)| p.iter().copied())
        .chain(dots.iter().map(|(x, y, _)| (*x, *y)));
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for (x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let ystep = nice_step(if y1 > 0.0 { y1 } else { 1.0 }, 5);
    let ymax = ((y1 / ystep).ceil() * ystep).max(ystep);
    let xs = Scale {
        min: x0,
        max: x1,
        from: plot.x,
        to: plot.x + plot.w,
    };
    let ys = Scale {
        min: 0.0,
        max: ymax,
        from: plot.y + plot.h,
        to: plot.y,
    };
    let lines = series
        .iter()
        .enumerate()
        .map(|(i, (name, pts))| Line {
            name: name.to_string(),
            color: COLORS[i % COLORS.len()].to_string(),
            points: pts
                .iter()
                .map(|(x, y)| format!("{},{}", round(xs.at(*x)), round(ys.at(*y))))
                .collect::<Vec<_>>()
                .join(" "),
            legend_y: plot.y + 14.0 + 18.0 * i as f64,
        })
        .collect();
    Chart {
        id: id.into(),
        title: title.into(),
        width: WIDTH,
        height: HEIGHT,
        plot,
        x_label: x_label.into(),
        y_label: y_label.into(),
        x_ticks: xs.ticks(nice_step(x1 - x0, 8)),
        y_ticks: ys.ticks(ystep),
        lines,
        dots: dots
            .iter()
            .map(|(x, y, l)| Dot {
                x: round(xs.at(*x)),
                y: round(ys.at(*y)),
                label: l.clone(),
            })
            .collect(),
        marks: Vec::new(),
        events: Vec::new(),
        x_range: (x0, x1),
    }
}

/// Above this ratio of the largest value to the median the y axis of a scatter is logarithmic:
/// a few timeouts at 30 s would otherwise press every other request onto the x axis.
const LOG_RATIO: f64 = 50.0;

/// A scatter plot's series: its legend, whether its marks are crosses (failures), its points.
pub type ScatterSeries = (String, bool, Vec<(f64, f64)>);

/// A scatter plot of series of (x, y) points; `cross` series are drawn as crosses on top of the
/// dots. The y axis starts at 0, or is logarithmic when the values span too much.
pub fn scatter(id: &str, title: &str, x_label: &str, y_label: &str, series: &[ScatterSeries]) -> Chart {
    let mut c = chart(id, title, x_label, y_label, &[], &[]);
    let mut ys: Vec<f64> = series.iter().flat_map(|(_, _, p)| p.iter().map(|(_, y)| *y)).collect();
    ys.sort_by(f64::total_cmp);
    let (x1, y1) = series
        .iter()
        .flat_map(|(_, _, p)| p.iter())
        .fold((0.0f64, 0.0f64), |(a, b), (x, y)| (a.max(*x), b.max(*y)));
    let median = ys.get(ys.len() / 2).copied().unwrap_or(0.0);
    let xstep = nice_step(if x1 > 0.0 { x1 } else { 1.0 }, 8);
    let xs = Scale {
        min: 0.0,
        max: ((x1 / xstep).ceil() * xstep).max(xstep),
        from: c.plot.x,
        to: c.plot.x + c.plot.w,
    };
    c.x_ticks = xs.ticks(xstep);
    let log = median > 0.0 && y1 / median > LOG_RATIO;
    let at_y: Box<dyn Fn(f64) -> f64> = if log {
        // Whole decades around the values; a value of 0 sits on the lowest.
        let lo = 10f64.powf(ys.iter().find(|v| **v > 0.0).copied().unwrap_or(median).log10().floor());
        let hi = 10f64.powf(y1.log10().ceil()).max(lo * 10.0);
        let s = Scale {
            min: lo.log10(),
            max: hi.log10(),
            from: c.plot.y + c.plot.h,
            to: c.plot.y,
        };
        let mut ticks = Vec::new();
        let mut d = lo;
        while d <= hi * 1.0001 && ticks.len() < 12 {
            ticks.push(Tick {
                pos: round(s.at(d.log10())),
                label: label(d),
            });
            d *= 10.0;
        }
        c.y_ticks = ticks;
        c.y_label = format!("{y_label} (log scale)");
        Box::new(move |v: f64| s.at(v.max(lo).log10()))
    } else {
        let ystep = nice_step(if y1 > 0.0 { y1 } else { 1.0 }, 5);
        let s = Scale {
            min: 0.0,
            max: ((y1 / ystep).ceil() * ystep).max(ystep),
            from: c.plot.y + c.plot.h,
            to: c.plot.y,
        };
        c.y_ticks = s.ticks(ystep);
        Box::new(move |v: f64| s.at(v))
    };
    let mut failures = 0;
    c.marks = series
        .iter()
        .enumerate()
        .map(|(i, (name, cross, pts))| {
            let mut path = String::with_capacity(pts.len() * 16);
            for (x, y) in pts {
                let (x, y) = (round(xs.at(*x)), round(at_y(*y)));
                if *cross {
                    path.push_str(&format!("M{} {}l6 6m0-6l-6 6", round(x - 3.0), round(y - 3.0)));
                } else {
                    path.push_str(&format!("M{x} {y}h0"));
                }
            }
            let color = if *cross {
                failures += 1;
                FAILURE_COLORS[(failures - 1) % FAILURE_COLORS.len()]
            } else {
                COLORS[0]
            };
            Marks {
                name: name.clone(),
                color: color.to_string(),
                cross: *cross,
                count: pts.len(),
                path,
                legend_y: c.plot.y + 14.0 + 18.0 * i as f64,
            }
        })
        .collect();
    c
}

/// Colours for failures' crosses: red first, none of them the successes' blue.
const FAILURE_COLORS: [&str; 4] = ["#d62728", "#ff7f0e", "#9467bd", "#8c564b"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_nice() {
        assert_eq!(nice_step(100.0, 5), 20.0);
        assert_eq!(nice_step(7.0, 5), 2.0);
        assert_eq!(nice_step(0.3, 5), 0.1);
        assert_eq!(nice_step(0.0, 5), 1.0);
    }

    #[test]
    fn points_map_into_the_plot_area() {
        let c = chart("t", "T", "x", "y", &[("a", vec![(0.0, 0.0), (10.0, 100.0)])], &[]);
        let pts: Vec<(f64, f64)> = c.lines[0]
            .points
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        assert_eq!(pts[0], (c.plot.x, c.plot.y + c.plot.h), "origin at bottom left");
        assert_eq!(pts[1], (c.plot.x + c.plot.w, c.plot.y), "max at top right");
        assert_eq!(c.y_ticks.last().unwrap().label, "100");
    }

    #[test]
    fn a_scatter_marks_failures_as_crosses_and_goes_logarithmic_for_outliers() {
        let ok: Vec<(f64, f64)> = (0..100).map(|i| (i as f64 / 10.0, 5.0 + (i % 3) as f64)).collect();
        let c = scatter(
            "s",
            "S",
            "seconds",
            "ms",
            &[
                ("success".into(), false, ok),
                ("timeout".into(), true, vec![(4.0, 30_000.0)]),
            ],
        );
        assert_eq!((c.marks[0].count, c.marks[1].count), (100, 1));
        assert_eq!(c.marks[0].path.matches('M').count(), 100);
        assert!(c.marks[1].cross && c.marks[1].path.contains("l6 6"));
        assert_ne!(c.marks[0].color, c.marks[1].color);
        assert!(c.y_label.contains("log"), "{}", c.y_label);
        let labels: Vec<&str> = c.y_ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["1", "10", "100", "1000", "10000", "100000"]);
        // Linear when nothing stands out.
        let c = scatter(
            "s",
            "S",
            "seconds",
            "ms",
            &[("success".into(), false, vec![(1.0, 5.0), (2.0, 9.0)])],
        );
        assert!(!c.y_label.contains("log"));
        assert_eq!(c.y_ticks[0].label, "0");
    }
}
