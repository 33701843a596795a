//! `optimize` and `predict` on a recorded array of scalars (`work_mem@file.c:N`): the
//! per-thread slices the recording shows, priced as they are and padded to whole lines in a
//! line-aligned block, with a patch (the slice-length macro and the allocation) where the
//! source says how.

use std::fmt::Write as _;

use anyhow::{Result, bail};
use serde::Serialize;

use lineup::analysis::cost::Cost;
use lineup::analysis::slices::{self, Slices};
use lineup::profile::{AllocationSite, Profile};
use lineup::types::Types;

use super::subject::{self, ModelArgs};

/// The priced plan for one scalar array.
#[derive(Serialize)]
pub struct ScalarPlan {
    pub schema: u32,
    pub type_name: String,
    pub allocation: AllocationSite,
    pub cacheline_size: u64,
    pub slices: Slices,
    pub current: Cost,
    /// Slices padded to whole lines, the block line-aligned.
    pub plan: Cost,
    /// Why the padded slices are no fix (the model prices them above the current layout).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected: Option<String>,
    pub advice: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// The plan for `name` when it is a recorded array of scalars (no struct of that name in the
/// types), `None` for anything else. An array whose writes show no per-thread slices is
/// refused with the prose advice and the reason.
pub fn plan(
    types: &Types<'_>,
    profile: &Profile,
    name: &str,
    model_args: &ModelArgs,
) -> Result<Option<ScalarPlan>> {
    if !types.find_composites(name).is_empty() {
        return Ok(None);
    }
    let Some(tp) = profile.type_profile(name) else {
        return Ok(None);
    };
    let Some(prose) = lineup::record::scalar_array_advice(tp, profile.cacheline_size) else {
        return Ok(None);
    };
    let machine_cls = model_args.machine()?.cacheline_size;
    let cls = model_args.cacheline_size.unwrap_or(machine_cls);
    let accesses = profile.type_accesses(name);
    // The decision diagnose words its advice from: slices to pad, or why there are none.
    let (site, found) =
        lineup::record::scalar_slices(tp, &accesses, cls).expect("the advice names a site");
    let (elem_name, s) = match found {
        Ok(found) => found,
        Err(why) => bail!("{prose} (no per-thread slices to pad: {why})"),
    };
    let elem_size = s.elem_size;
    let mut t = Types::new(8);
    let id = slices::slice_struct(
        &mut t,
        lineup::types::lossy_name(name.as_bytes()),
        lineup::types::lossy_name(elem_name.as_bytes()),
        site.element_kind.as_deref() == Some("float"),
        &s,
    );
    let model = model_args.build(&t, id, profile, &accesses)?;
    let current = model.evaluate(&model.current);
    let order: Vec<usize> = (0..model.units.len()).collect();
    let all: std::collections::BTreeSet<usize> = order.iter().copied().collect();
    let padded = lineup::analysis::optimize::derive(&model.units, &order, &all, model.cls, 1);
    let plan = model.evaluate(&padded);
    let rejected = (plan.total_cycles() > current.total_cycles() * (1.0 + 1e-6)).then(|| {
        format!(
            "padding the slices costs {:.0} cycles in the model, more than the current {:.0}",
            plan.total_cycles(),
            current.total_cycles()
        )
    });
    let at = match (&site.function, &site.source) {
        (Some(f), Some(src)) => format!("in {f} at {src}"),
        (Some(f), None) => format!("in {f}"),
        (None, Some(src)) => format!("at {src}"),
        (None, None) => "on the heap".to_string(),
    };
    let writers: Vec<String> = s
        .writers
        .iter()
        .map(|(k, ts)| {
            let ts: Vec<String> = ts.iter().map(u32::to_string).collect();
            format!(
                "slice {k} (elements {}..{}) by thread {}",
                k * s.per_slice,
                (k + 1) * s.per_slice - 1,
                ts.join(", ")
            )
        })
        .collect();
    let advice = format!(
        "{name} is an array of {elem_name} ({elem_size} bytes each) allocated {at}, written in per-thread slices of {} elements ({}) that share {cls}-byte lines: pad each slice to {} elements ({} bytes, whole lines: the slice length a multiple of {}) and allocate the block aligned to the line (aligned_alloc({cls}, n * size) or posix_memalign) {at}; the block grows from {} to {} bytes",
        s.per_slice,
        writers.join(", "),
        s.padded_per_slice,
        s.padded_per_slice * elem_size,
        (cls / elem_size).max(1),
        s.elems * elem_size,
        s.padded_bytes(),
    );
    Ok(Some(ScalarPlan {
        schema: 1,
        type_name: name.to_string(),
        allocation: site,
        cacheline_size: cls,
        slices: s,
        current,
        plan,
        rejected,
        advice,
        diff: None,
    }))
}

impl ScalarPlan {
    /// The patch against `header` (shown as `shown`): the slice-length macro the allocation
    /// multiplies padded, and the allocation made line-aligned. Errors say why there is none
    /// (the site is in another file, no such macro, an allocation it cannot rewrite).
    pub fn patch(
        &self,
        header: &std::path::Path,
        text: &str,
        shown: &str,
    ) -> Result<String, String> {
        if let Some(why) = &self.rejected {
            return Err(why.clone());
        }
        let Some((file, line)) = self.allocation.source.as_ref().and_then(|src| {
            let (f, l) = src.rsplit_once(':')?;
            Some((f.to_string(), l.parse::<usize>().ok()?))
        }) else {
            return Err("the recording names no source line of the allocation".to_string());
        };
        if header.file_name() != std::path::Path::new(&file).file_name() {
            return Err(format!(
                "the allocation is in {file}, not {}",
                header.display()
            ));
        }
        // The slice length as a macro of elements (`STRIDE 4` doubles) or of bytes
        // (`CACHE_LINE 32`, PARSEC's), whichever the allocation multiplies.
        let (per, padded_per) = (self.slices.per_slice, self.slices.padded_per_slice);
        let bytes = self.slices.elem_size;
        let Some((padded, _)) =
            slices::pad_stride_macro(text, line, per, padded_per).or_else(|| {
                (bytes > 1)
                    .then(|| slices::pad_stride_macro(text, line, per * bytes, padded_per * bytes))
                    .flatten()
            })
        else {
            return Err(format!(
                "no #define of the slice length ({per} elements, {} bytes) among the names of the allocation at {file}:{line}: the stride is the program's arithmetic; make it {padded_per} elements ({} bytes, a multiple of the {}-byte line) by hand",
                per * bytes,
                padded_per * bytes,
                self.cacheline_size
            ));
        };
        let aligned = lineup::emit::patch::align_allocation(&padded, line, self.cacheline_size)?;
        Ok(lineup::emit::patch::unified_diff(text, &aligned, shown))
    }

    /// The report for people: what the slices are, the two layouts priced, the advice.
    pub fn text(&self, model_args: &ModelArgs) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{}: {} per-thread slices of {} x {} bytes, {}-byte lines; machine {}",
            self.type_name,
            self.slices.count(),
            self.slices.per_slice,
            self.slices.elem_size,
            self.cacheline_size,
            model_args.machine
        );
        let _ = writeln!(s);
        s.push_str(&subject::cost_table(&[
            ("current".to_string(), &self.current),
            ("lineup".to_string(), &self.plan),
        ]));
        let _ = writeln!(s, "\n{}", self.advice);
        if let Some(why) = &self.rejected {
            let _ = writeln!(s, "\nnot proposed: {why}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(rejected: Option<&str>) -> ScalarPlan {
        ScalarPlan {
            schema: 1,
            type_name: "work_mem@sc.c:5".into(),
            allocation: AllocationSite {
                function: Some("main".into()),
                source: Some("sc.c:5".into()),
                ..Default::default()
            },
            cacheline_size: 64,
            slices: Slices {
                elem_size: 8,
                elems: 8,
                per_slice: 4,
                padded_per_slice: 8,
                writers: vec![(0, vec![0]), (1, vec![1])],
            },
            current: Cost::default(),
            plan: Cost::default(),
            rejected: rejected.map(str::to_string),
            advice: String::new(),
            diff: None,
        }
    }

    const SRC: &str = "#include <stdlib.h>\n#define STRIDE 4\ndouble *w;\nint main(void) {\n    w = calloc(2 * STRIDE, sizeof(double));\n}\n";

    #[test]
    fn the_patch_pads_the_stride_macro_and_aligns_the_allocation() {
        let p = std::path::Path::new("dir/sc.c");
        let d = plan(None).patch(p, SRC, "sc.c").unwrap();
        assert!(
            d.contains("\n-#define STRIDE 4\n") && d.contains("\n+#define STRIDE 8\n"),
            "{d}"
        );
        assert!(
            d.contains("+    w = lineup_aligned_calloc(64, 2 * STRIDE, sizeof(double));"),
            "{d}"
        );
        // No macro for the slice length: no patch, and why.
        let e = plan(None)
            .patch(p, &SRC.replace("STRIDE", "4 /* no macro */"), "sc.c")
            .unwrap_err();
        assert!(
            e.contains("no #define of the slice length (4 elements, 32 bytes)"),
            "{e}"
        );
        // Another file than the allocation's, or a plan the model rejects: none either.
        let e = plan(None)
            .patch(std::path::Path::new("other.c"), SRC, "other.c")
            .unwrap_err();
        assert!(e.contains("the allocation is in sc.c"), "{e}");
        let e = plan(Some("costs more")).patch(p, SRC, "sc.c").unwrap_err();
        assert_eq!(e, "costs more");
    }
}
