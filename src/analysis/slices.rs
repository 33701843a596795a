//! Per-thread slices of an array of scalars (PARSEC streamcluster's `double *work_mem`, a
//! slice of `STRIDE` doubles per thread): no member order exists to change, but the slices
//! are the movable pieces. Found from which thread writes which element, priced by the cost
//! model as a struct of one array member per slice, and fixed by padding each slice to
//! whole lines (the stride a multiple of `line / element`) in a line-aligned block.

use serde::Serialize;

use crate::profile::Access;
use crate::types::{Composite, Kind, Member, Type, TypeId, Types};

/// The per-thread decomposition of one recorded array of scalars.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Slices {
    pub elem_size: u64,
    /// Elements in the recorded block (or the piece of it the profile folds blocks into).
    pub elems: u64,
    /// Elements per thread's slice now, and padded to whole lines.
    pub per_slice: u64,
    pub padded_per_slice: u64,
    /// The written slices, each with the threads that write it.
    pub writers: Vec<(u64, Vec<u32>)>,
}

impl Slices {
    pub fn count(&self) -> u64 {
        self.elems / self.per_slice
    }
    /// Bytes of the block with padded slices.
    pub fn padded_bytes(&self) -> u64 {
        self.count() * self.padded_per_slice * self.elem_size
    }
}

/// Splits a block of `block_bytes` of `elem_size`-byte scalars into equal per-thread slices:
/// the threads that write it each write only elements of one slice, a different slice each,
/// and the slice length is the block's elements over the writing threads (the smallest such
/// decomposition the evidence allows). Errors say why there is none.
pub fn per_thread_slices(
    accesses: &[Access],
    elem_size: u64,
    block_bytes: u64,
    cls: u64,
) -> Result<Slices, String> {
    if elem_size == 0 || block_bytes < elem_size || !block_bytes.is_multiple_of(elem_size) {
        return Err(format!(
            "a block of {block_bytes} bytes is no array of {elem_size}-byte elements"
        ));
    }
    let elems = block_bytes / elem_size;
    // Written element range per thread.
    let mut ranges: std::collections::BTreeMap<u32, (u64, u64)> = Default::default();
    for a in accesses {
        let (Some(off), Some(cpus)) = (a.offset, a.cpus.as_ref()) else {
            continue;
        };
        if a.counts.writes() <= 0.0 || off >= block_bytes {
            continue;
        }
        let i = off / elem_size;
        for &t in &cpus.list {
            let r = ranges.entry(t).or_insert((i, i));
            r.0 = r.0.min(i);
            r.1 = r.1.max(i);
        }
    }
    if ranges.len() < 2 {
        return Err(format!(
            "{} thread(s) write the array: no per-thread slices",
            ranges.len()
        ));
    }
    let n = ranges.len() as u64;
    if !elems.is_multiple_of(n) {
        return Err(format!(
            "{elems} elements do not split into {n} equal per-thread slices"
        ));
    }
    let per_slice = elems / n;
    let mut writers: std::collections::BTreeMap<u64, Vec<u32>> = Default::default();
    for (&t, &(lo, hi)) in &ranges {
        if lo / per_slice != hi / per_slice {
            return Err(format!(
                "thread {t} writes elements {lo} to {hi}, across slices of {per_slice}"
            ));
        }
        writers.entry(lo / per_slice).or_default().push(t);
    }
    if writers.len() < 2 {
        return Err("every writing thread writes the same slice".to_string());
    }
    Ok(Slices {
        elem_size,
        elems,
        per_slice,
        padded_per_slice: (per_slice * elem_size).div_ceil(cls).max(1) * cls / elem_size,
        writers: writers.into_iter().collect(),
    })
}

/// Adds to `types` the struct the cost model prices the array as: one member per slice
/// (`slice0`, `slice1`, ... each an array of `per_slice` elements of a scalar named
/// `elem_name`, `float` kinds as floating point). Returns its id.
pub fn slice_struct<'a>(
    types: &mut Types<'a>,
    name: &'a str,
    elem_name: &'a str,
    float: bool,
    s: &Slices,
) -> TypeId {
    let size = s.elem_size.min(u32::MAX as u64) as u32;
    let elem = types.push(Type {
        name: elem_name,
        kind: if float {
            Kind::Float { size }
        } else {
            Kind::Int {
                size,
                signed: true,
                is_char: false,
                is_bool: false,
            }
        },
    });
    let slice = types.push(Type {
        name: "",
        kind: Kind::Array {
            elem,
            count: s.per_slice,
        },
    });
    let members = (0..s.count())
        .map(|k| Member {
            name: crate::types::lossy_name(format!("slice{k}").as_bytes()),
            ty: slice,
            bit_offset: k * s.per_slice * s.elem_size * 8,
            bitfield_size: 0,
            declared_align: None,
        })
        .collect();
    types.push(Type {
        name,
        kind: Kind::Struct(Composite {
            size: s.elems * s.elem_size,
            members,
            declared_align: None,
            is_declaration: false,
            origin: None,
        }),
    })
}

/// Rewrites `#define NAME N` in `text` to `#define NAME padded` for the first identifier of
/// `line` (1-based, the allocation call) that the file defines as `per_slice`: the slice
/// length the allocation multiplies. Returns the new text and the name, or None when no
/// such macro exists (the stride is the program's arithmetic, to change by hand).
pub fn pad_stride_macro(
    text: &str,
    line: usize,
    per_slice: u64,
    padded: u64,
) -> Option<(String, String)> {
    let at = text.lines().nth(line.checked_sub(1)?)?;
    let words: Vec<&str> = at
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(|c: char| c.is_alphabetic() || c == '_'))
        .collect();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for w in words {
        for (i, l) in lines.iter().enumerate() {
            let t = l.trim_start();
            let Some(rest) = t.strip_prefix('#') else {
                continue;
            };
            let Some(def) = rest.trim_start().strip_prefix("define") else {
                continue;
            };
            let mut parts = def.split_whitespace();
            let (Some(name), Some(value)) = (parts.next(), parts.next()) else {
                continue;
            };
            if name != w || value.trim_end_matches(['u', 'U', 'l', 'L']).parse() != Ok(per_slice) {
                continue;
            }
            // The value after the name (not an earlier occurrence of the digits).
            let name_end = l.find(name).expect("split from the line") + name.len();
            let vpos = name_end + l[name_end..].find(value).expect("after the name");
            let mut out: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
            out[i] = format!("{}{padded}{}", &l[..vpos], &l[vpos + value.len()..]);
            return Some((out.concat(), name.to_string()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Counts, CpuUse};

    fn store(off: u64, thread: u32) -> Access {
        Access {
            offset: Some(off),
            size: Some(8),
            counts: Counts {
                stores: 10.0,
                ..Default::default()
            },
            cpus: Some(CpuUse {
                list: vec![thread],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn streamcluster_slices_of_four_doubles_pad_to_eight() {
        // Thread 0 writes work_mem[0] and [1], thread 1 [4] and [5], main reads all.
        let a = [store(0, 0), store(8, 0), store(32, 1), store(40, 1)];
        let s = per_thread_slices(&a, 8, 64, 64).unwrap();
        assert_eq!((s.per_slice, s.padded_per_slice, s.count()), (4, 8, 2));
        assert_eq!(s.writers, vec![(0, vec![0]), (1, vec![1])]);
        assert_eq!(s.padded_bytes(), 128);
        let mut t = Types::new(8);
        let id = slice_struct(&mut t, "work_mem@sc.c:80", "double", true, &s);
        let l = crate::layout::layout(&t, id, 64).unwrap();
        let names: Vec<&str> = l.members.iter().map(|f| f.declarator.as_str()).collect();
        assert_eq!(names, ["slice0[4]", "slice1[4]"]);
        assert_eq!(l.size, 64);
    }

    #[test]
    fn slices_need_two_threads_each_in_one_slice() {
        let one = [store(0, 0), store(40, 0)];
        assert!(per_thread_slices(&one, 8, 64, 64).is_err());
        let across = [store(0, 0), store(40, 0), store(48, 1)];
        let e = per_thread_slices(&across, 8, 64, 64).unwrap_err();
        assert!(e.contains("across slices of 4"), "{e}");
    }

    #[test]
    fn the_stride_macro_of_the_allocation_is_padded() {
        let text = "#ifndef STRIDE\n#define STRIDE 4\n#endif\n#define N 4\nint *p;\nvoid f(int n) { p = calloc(n * STRIDE, 8); }\n";
        let (out, name) = pad_stride_macro(text, 6, 4, 8).unwrap();
        assert_eq!(name, "STRIDE");
        assert!(
            out.contains("#define STRIDE 8\n") && out.contains("#define N 4\n"),
            "{out}"
        );
        assert_eq!(pad_stride_macro(text, 6, 3, 8), None);
        assert_eq!(pad_stride_macro(text, 5, 4, 8), None);
    }
}
