//! One self-contained HTML page per report (`--html OUT.html` on `diagnose`, `optimize` and
//! `predict`): the struct drawn as cache lines of bytes, heat by loads, stores or HITM, the
//! verdict per line, and for `optimize`/`predict` every layout side by side with the modeled
//! cost table. The data travels as JSON in a `<script type="application/json">` tag; a small
//! hand-written renderer (`html/page.js`) draws it. No network: CSS and JS are inline.
//!
//! The view model ([`Page`]) is the JSON contract (`docs/html.md`); bump [`PAGE_SCHEMA`] on
//! incompatible changes. `measured` fields are the hook for a later `replay`.

use serde::Serialize;

use crate::analysis::cost::{Cost, Placement, Unit};
use crate::analysis::diagnose::{Diagnosis, MemberUse};
use crate::layout::{Field, Layout};

/// Version of the page's JSON document.
pub const PAGE_SCHEMA: u32 = 1;

const TEMPLATE: &str = include_str!("html/page.html");
const CSS: &str = include_str!("html/page.css");
const JS: &str = include_str!("html/page.js");

/// Everything the page shows.
#[derive(Clone, Debug, Serialize)]
pub struct Page {
    pub schema: u32,
    /// `diagnose`, `optimize` or `predict`.
    pub command: String,
    pub type_name: String,
    pub cacheline_size: u64,
    /// Lines of context shown under the title (evidence, machine, search).
    pub notes: Vec<String>,
    /// The current layout first, then lineup's and any candidates.
    pub layouts: Vec<LayoutView>,
}

/// One arrangement of the struct.
#[derive(Clone, Debug, Serialize)]
pub struct LayoutView {
    /// `current`, `lineup`, or the candidate's file name.
    pub name: String,
    pub size: u64,
    /// Members, holes and padding, by offset, covering every byte once.
    pub cells: Vec<Cell>,
    /// One per cache line, by index.
    pub lines: Vec<LineView>,
    /// Modeled cost (optimize, predict).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostView>,
    /// Measured figures from a replay of this layout; `null` until one adds them.
    pub measured: Option<Measured>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// `field`, `hole` or `padding`.
    pub kind: &'static str,
    /// Member name (bitfields sharing storage and inline anonymous members joined by `/`);
    /// empty for holes and padding.
    pub name: String,
    pub type_name: String,
    pub offset: u64,
    pub size: u64,
    pub loads: f64,
    pub stores: f64,
    pub rmw: f64,
    pub hitm: f64,
    pub cpus: u32,
    /// Functions touching it, most accesses first (at most five).
    pub functions: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LineView {
    pub index: u64,
    pub start: u64,
    pub end: u64,
    /// diagnose's verdict (`false_sharing`, ..., `cold`) for the current layout; for other
    /// layouts what the cost model finds (`false_sharing`, `true_sharing`, `quiet`).
    pub verdict: String,
    pub label: String,
    pub explanation: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub false_cycles: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub true_cycles: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CostView {
    pub false_transfers: f64,
    pub true_transfers: f64,
    pub false_cycles: f64,
    pub true_cycles: f64,
    pub locality_cycles: f64,
    pub total_cycles: f64,
    /// Change of total cycles against the first layout, in percent.
    pub change_pct: Option<f64>,
    pub cachelines: u64,
}

/// What a replay measured for one layout (filled in by a later `lineup replay`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Measured {
    /// What was measured (`perf bench sched pipe`, a --regex figure).
    pub figure: String,
    pub unit: String,
    pub mean: f64,
    pub std_pct: f64,
    pub runs: u32,
    /// Change of the mean against the first layout's, in percent.
    pub change_pct: Option<f64>,
    pub lower_is_better: bool,
}

/// Accesses of every diagnosed member whose offset lies in `[start, end)`.
fn usage(d: Option<&Diagnosis>, start: u64, end: u64) -> (f64, f64, f64, f64, u32, Vec<String>) {
    let mut r = (0.0, 0.0, 0.0, 0.0, 0u32, Vec::new());
    let Some(d) = d else { return r };
    let mut fns: Vec<(String, f64)> = Vec::new();
    let inside: Vec<&MemberUse> = d
        .members
        .iter()
        .filter(|m| m.offset >= start && m.offset < end.max(start + 1))
        .collect();
    for m in inside {
        r.0 += m.counts.loads;
        r.1 += m.counts.stores;
        r.2 += m.counts.rmw;
        r.3 += m.counts.hitm() + m.counts.peer();
        r.4 = r.4.max(m.cpus);
        for f in &m.functions {
            match fns.iter_mut().find(|x| x.0 == f.name) {
                Some(x) => x.1 += f.writes + f.reads,
                None => fns.push((f.name.clone(), f.writes + f.reads)),
            }
        }
    }
    fns.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    r.5 = fns.into_iter().take(5).map(|f| f.0).collect();
    r
}

fn field_cell(
    name: String,
    type_name: String,
    offset: u64,
    size: u64,
    d: Option<&Diagnosis>,
) -> Cell {
    let (loads, stores, rmw, hitm, cpus, functions) = usage(d, offset, offset + size);
    Cell {
        kind: "field",
        name,
        type_name,
        offset,
        size,
        loads,
        stores,
        rmw,
        hitm,
        cpus,
        functions,
    }
}

fn gap(kind: &'static str, offset: u64, size: u64) -> Cell {
    Cell {
        kind,
        name: String::new(),
        type_name: String::new(),
        offset,
        size,
        loads: 0.0,
        stores: 0.0,
        rmw: 0.0,
        hitm: 0.0,
        cpus: 0,
        functions: Vec::new(),
    }
}

/// Sorts `fields` by offset and fills the bytes between them with holes and the tail with
/// padding, so that the cells cover `0..size` exactly once (overlaps are clipped).
fn fill(mut fields: Vec<Cell>, size: u64) -> Vec<Cell> {
    fields.sort_by_key(|c| c.offset);
    let mut out = Vec::with_capacity(fields.len() * 2);
    let mut at = 0u64;
    for mut c in fields {
        if c.offset > at {
            out.push(gap("hole", at, c.offset - at));
            at = c.offset;
        }
        if c.offset < at {
            // Overlaps a previous cell (union-like): keep the part after it.
            let cut = at - c.offset;
            if cut >= c.size {
                continue;
            }
            c.size -= cut;
            c.offset = at;
        }
        at = c.offset + c.size;
        out.push(c);
    }
    if at < size {
        out.push(gap("padding", at, size - at));
    }
    out
}

/// Cells of a laid-out struct: top-level members, inline anonymous structs expanded, bitfields
/// sharing a storage unit and unions shown as one cell.
pub fn cells_from_layout(layout: &Layout, d: Option<&Diagnosis>) -> Vec<Cell> {
    fn walk(fields: &[Field], d: Option<&Diagnosis>, out: &mut Vec<Cell>) {
        for f in fields {
            if f.inline == Some("struct") && f.name.is_empty() && !f.members.is_empty() {
                walk(&f.members, d, out);
                continue;
            }
            let name = if f.name.is_empty() {
                let inner: Vec<&str> = f.members.iter().map(|m| m.name.as_str()).collect();
                format!("{{{}}}", inner.join("/"))
            } else {
                f.name.clone()
            };
            // Bitfields sharing a storage unit, and the members of a union, share one cell.
            if let Some(last) = out.last_mut()
                && last.offset == f.offset
                && (f.is_bitfield() || last.size > 0 && f.size > 0)
            {
                last.name = format!("{}/{}", last.name, name);
                last.size = last.size.max(f.size);
                continue;
            }
            let ty = if f.inline.is_some() {
                f.inline.unwrap_or_default().to_string()
            } else {
                f.type_name.clone()
            };
            out.push(field_cell(name, ty, f.offset, f.size, d));
        }
    }
    let mut out = Vec::new();
    walk(&layout.members, d, &mut out);
    // Counts were gathered per cell range; bitfield runs merged later get their own range.
    for c in &mut out {
        let (loads, stores, rmw, hitm, cpus, functions) = usage(d, c.offset, c.offset + c.size);
        (c.loads, c.stores, c.rmw, c.hitm, c.cpus, c.functions) =
            (loads, stores, rmw, hitm, cpus, functions);
    }
    fill(out, layout.size)
}

/// Cells of `units` placed at `placement`; counts are those of the bytes each unit held in
/// the current layout (`units[i].offset`).
pub fn cells_from_units(units: &[Unit], placement: &Placement, d: Option<&Diagnosis>) -> Vec<Cell> {
    let cells = units
        .iter()
        .zip(&placement.offsets)
        .map(|(u, &at)| {
            let mut c = field_cell(u.name.clone(), String::new(), u.offset, u.size, d);
            c.offset = at;
            c
        })
        .collect();
    fill(cells, placement.size)
}

/// Lines with diagnose's verdicts (lines it does not list are cold).
pub fn lines_from_diagnosis(size: u64, cls: u64, d: &Diagnosis) -> Vec<LineView> {
    (0..size.div_ceil(cls.max(1)).max(1))
        .map(|i| {
            let start = i * cls;
            let end = (start + cls).min(size.max(1)) - 1;
            match d.lines.iter().find(|l| l.index == i) {
                Some(l) => LineView {
                    index: i,
                    start,
                    end,
                    verdict: serde_json::to_value(l.verdict)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    label: l.verdict.label().to_string(),
                    explanation: l.explanation.clone(),
                    false_cycles: None,
                    true_cycles: None,
                },
                None => LineView {
                    index: i,
                    start,
                    end,
                    verdict: "cold".into(),
                    label: "cold".into(),
                    explanation: "no recorded access".into(),
                    false_cycles: None,
                    true_cycles: None,
                },
            }
        })
        .collect()
}

/// Lines with what the cost model finds on them.
pub fn lines_from_cost(size: u64, cls: u64, cost: &Cost) -> Vec<LineView> {
    (0..size.div_ceil(cls.max(1)).max(1))
        .map(|i| {
            let start = i * cls;
            let end = (start + cls).min(size.max(1)) - 1;
            let lc = cost.lines.iter().find(|l| l.index == i);
            let (fc, tc) = lc
                .map(|l| (l.false_cycles, l.true_cycles))
                .unwrap_or((0.0, 0.0));
            let (verdict, label) = if fc <= 0.0 && tc <= 0.0 {
                ("quiet", "no contention")
            } else if fc >= tc {
                ("false_sharing", "false sharing")
            } else {
                ("true_sharing", "true sharing")
            };
            let explanation = match lc {
                Some(l) if fc > 0.0 || tc > 0.0 => format!(
                    "modeled: {:.1} false and {:.1} true transfers, {:.0} + {:.0} cycles; hot: {}",
                    l.false_transfers,
                    l.true_transfers,
                    fc,
                    tc,
                    l.fields.join(", ")
                ),
                Some(l) if !l.fields.is_empty() => {
                    format!(
                        "modeled: touched without transfers: {}",
                        l.fields.join(", ")
                    )
                }
                _ => "modeled: no coherence traffic".to_string(),
            };
            LineView {
                index: i,
                start,
                end,
                verdict: verdict.into(),
                label: label.into(),
                explanation,
                false_cycles: Some(fc),
                true_cycles: Some(tc),
            }
        })
        .collect()
}

impl CostView {
    pub fn new(cost: &Cost, base_total: Option<f64>) -> CostView {
        let total = cost.total_cycles();
        CostView {
            false_transfers: cost.false_transfers,
            true_transfers: cost.true_transfers,
            false_cycles: cost.false_cycles,
            true_cycles: cost.true_cycles,
            locality_cycles: cost.locality_cycles,
            total_cycles: total,
            change_pct: base_total
                .filter(|b| *b > 0.0)
                .map(|b| (total - b) / b * 100.0),
            cachelines: cost.cachelines,
        }
    }
}

impl LayoutView {
    /// A modeled layout of `units` at `placement` (optimize, predict).
    pub fn modeled(
        name: &str,
        units: &[Unit],
        placement: &Placement,
        cost: &Cost,
        base_total: Option<f64>,
        cls: u64,
        d: Option<&Diagnosis>,
    ) -> LayoutView {
        LayoutView {
            name: name.to_string(),
            size: placement.size,
            cells: cells_from_units(units, placement, d),
            lines: lines_from_cost(placement.size, cls, cost),
            cost: Some(CostView::new(cost, base_total)),
            measured: None,
        }
    }
}

impl Page {
    /// Gives cells of later layouts that lack a C type the type of the same-named cell of the
    /// first layout (units of the cost model carry no type names).
    pub fn fill_type_names(&mut self) {
        let Some((first, rest)) = self.layouts.split_first_mut() else {
            return;
        };
        for l in rest {
            for c in l
                .cells
                .iter_mut()
                .filter(|c| c.kind == "field" && c.type_name.is_empty())
            {
                if let Some(f) = first.cells.iter().find(|f| f.name == c.name) {
                    c.type_name = f.type_name.clone();
                }
            }
        }
    }
}

/// The page as one HTML document. The JSON is made safe for a `<script>` element by escaping
/// `<`, `>` and `&` (only ever inside JSON strings) as `\u003c` etc.
pub fn render(page: &Page) -> String {
    let json = serde_json::to_string(page).expect("the page serializes");
    let json = json
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    let title = format!("lineup {}: struct {}", page.command, page.type_name);
    let title = title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    TEMPLATE
        .replace("{{TITLE}}", &title)
        .replace("{{CSS}}", CSS)
        .replace("{{JS}}", JS)
        .replace("{{DATA}}", &json)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(name: &str, offset: u64, size: u64) -> Cell {
        let mut c = gap("field", offset, size);
        c.name = name.into();
        c
    }

    #[test]
    fn fill_covers_every_byte_once() {
        let cells = fill(vec![cell("b", 8, 4), cell("a", 0, 4), cell("u", 10, 4)], 24);
        let spans: Vec<(&str, u64, u64)> =
            cells.iter().map(|c| (c.kind, c.offset, c.size)).collect();
        assert_eq!(
            spans,
            vec![
                ("field", 0, 4),
                ("hole", 4, 4),
                ("field", 8, 4),
                ("field", 12, 2),
                ("padding", 14, 10)
            ]
        );
    }

    #[test]
    fn moved_units_keep_their_counts() {
        use crate::analysis::diagnose::FunctionUse;
        use crate::profile::Counts;
        let unit = |name: &str, offset, size| Unit {
            name: name.into(),
            members: vec![name.into()],
            member_indices: vec![],
            offset,
            size,
            align: 8,
            natural_align: 8,
        };
        let units = vec![unit("a", 0, 8), unit("hot", 8, 8)];
        let hot = MemberUse {
            name: "hot".into(),
            offset: 8,
            size: 8,
            cacheline: 0,
            counts: Counts {
                stores: 5.0,
                loads: 7.0,
                lcl_hitm: 2.0,
                ..Counts::default()
            },
            cpus: 4,
            functions: vec![FunctionUse {
                name: "bump".into(),
                writes: 5.0,
                reads: 7.0,
                cpus: 4,
                cpu_set: None,
            }],
            cpu_set: None,
            per_cpu: None,
            sim_split: (0.0, 0.0),
            element_writes: 0.0,
            element_reads: 0.0,
        };
        let d = Diagnosis {
            type_name: "s".into(),
            size: 16,
            cacheline_size: 64,
            lines: vec![],
            cold_lines: 1,
            members: vec![hot],
            unresolved_fields: vec![],
            misfits: vec![],
            findings: vec![],
            instances: None,
            machine: String::new(),
            queueing: String::new(),
        };
        // `hot` moves to its own line at 64; `a` stays; the rest is hole and padding.
        let placement = Placement {
            offsets: vec![0, 64],
            size: 128,
            align: 8,
        };
        let cells = cells_from_units(&units, &placement, Some(&d));
        let spans: Vec<(&str, &str, u64, u64)> = cells
            .iter()
            .map(|c| (c.kind, c.name.as_str(), c.offset, c.size))
            .collect();
        assert_eq!(
            spans,
            vec![
                ("field", "a", 0, 8),
                ("hole", "", 8, 56),
                ("field", "hot", 64, 8),
                ("padding", "", 72, 56)
            ]
        );
        let h = &cells[2];
        assert_eq!((h.stores, h.loads, h.hitm, h.cpus), (5.0, 7.0, 2.0, 4));
        assert_eq!(h.functions, vec!["bump".to_string()]);
        assert_eq!(cells[0].stores, 0.0);
        let lines = lines_from_cost(128, 64, &Cost::default());
        assert_eq!(lines.len(), 2);
        assert_eq!((lines[1].start, lines[1].end), (64, 127));
        assert!(lines.iter().all(|l| l.verdict == "quiet"));
    }

    #[test]
    fn data_cannot_close_the_script_element() {
        let page = Page {
            schema: PAGE_SCHEMA,
            command: "diagnose".into(),
            type_name: "</script><b>".into(),
            cacheline_size: 64,
            notes: vec!["a & b".into()],
            layouts: vec![],
        };
        let html = render(&page);
        assert_eq!(
            html.matches("</script>").count(),
            html.matches("<script").count()
        );
        assert!(html.contains("\\u003c/script\\u003e"));
        assert!(!html.contains("http://") && !html.contains("https://"));
    }
}
