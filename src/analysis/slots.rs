//! Per-thread slots of one array member (`unsigned long hits[8]`, each worker bumping
//! `hits[id]`): the optimizer moves whole members, and the array is one, so no order of
//! members separates its slots. What kernel engineers write instead is a slot type of its own
//! line (`struct { unsigned long v; } ____cacheline_aligned hits[8]`). This module finds such
//! arrays in the evidence (different CPUs writing different slots), prices the padded array
//! as the cost model prices any layout (each slot grows to whole lines), and makes the slot
//! type the printers show.

use serde::Serialize;

use super::cost::{Stream, Unit};
use crate::types::{Composite, Kind, Member, TypeId, Types};

/// The member of the slot type that holds one element.
pub const SLOT_MEMBER: &str = "v";

/// An array member whose slots different CPUs write.
#[derive(Clone, Debug, Serialize)]
pub struct SlottedArray {
    /// Index of the array's unit.
    pub unit: usize,
    pub member: String,
    /// Bytes of one element now, and of one padded slot.
    pub elem_size: u64,
    pub slot_size: u64,
    /// The slot's alignment: a line, or an aligned pair of lines where the machine's L2
    /// fetches pairs ([`SlottedArray::spaced`]).
    pub slot_align: u64,
    pub count: u64,
    /// The written slots, each with the CPUs (recorded threads) that write it.
    pub writers: Vec<(u64, Vec<u32>)>,
    /// The element type.
    #[serde(skip)]
    pub elem: TypeId,
}

impl SlottedArray {
    /// Bytes the padding adds to the struct's array.
    pub fn growth(&self) -> u64 {
        (self.slot_size - self.elem_size) * self.count
    }

    /// The same array with each slot rounded up to, and aligned on, `spacing` bytes (a line,
    /// or a pair of lines).
    pub fn spaced(&self, spacing: u64) -> SlottedArray {
        let spacing = spacing.max(1);
        SlottedArray {
            slot_size: self.elem_size.div_ceil(spacing) * spacing,
            slot_align: spacing,
            ..self.clone()
        }
    }
}

/// Array members of `c` (laid out as `units`) whose slots the evidence shows written by
/// different CPUs: at least two written slots with different writers. Evidence that does not
/// name the CPUs of each access (a sketch with `cpus = "all"`) cannot tell, and finds none.
pub fn per_thread_slots(
    types: &Types<'_>,
    c: &Composite<'_>,
    units: &[Unit],
    streams: &[Stream],
    cls: u64,
) -> Vec<SlottedArray> {
    let cls = cls.max(1);
    let mut out = Vec::new();
    for (u, unit) in units.iter().enumerate() {
        let [mi] = unit.member_indices[..] else {
            continue;
        };
        let Some(m) = c.members.get(mi) else { continue };
        if m.is_bitfield() || m.name.is_empty() {
            continue;
        }
        let Kind::Array { elem, count } = types.get(types.resolve(m.ty)).kind else {
            continue;
        };
        let elem_size = types.size_of(elem);
        // Elements of whole lines already keep to their own lines.
        if count < 2
            || elem_size == 0
            || elem_size.is_multiple_of(cls)
            || elem_size * count != unit.size
        {
            continue;
        }
        let mut writers: std::collections::BTreeMap<u64, std::collections::BTreeSet<u32>> =
            Default::default();
        for s in streams.iter().filter(|s| s.unit == u && s.writes > 0.0) {
            if s.cpu_list.is_empty() {
                continue;
            }
            let slot = s.inner / elem_size;
            // An access that straddles two slots is not a slot's.
            if (s.inner + s.size.max(1) - 1) / elem_size != slot {
                continue;
            }
            writers.entry(slot).or_default().extend(&s.cpu_list);
        }
        let sets: std::collections::BTreeSet<&std::collections::BTreeSet<u32>> =
            writers.values().collect();
        if writers.len() < 2 || sets.len() < 2 {
            continue;
        }
        out.push(SlottedArray {
            unit: u,
            member: m.name.to_string(),
            elem_size,
            slot_size: elem_size.div_ceil(cls) * cls,
            slot_align: cls,
            count,
            writers: writers
                .into_iter()
                .map(|(k, v)| (k, v.into_iter().collect()))
                .collect(),
            elem,
        });
    }
    out
}

/// The units and streams of the struct with every array of `arrays` made of line-sized,
/// line-aligned slots: the array's unit grows to `count` slots, and each access moves to its
/// slot's line at the same offset within the element.
pub fn padded(
    units: &[Unit],
    streams: &[Stream],
    arrays: &[SlottedArray],
    cls: u64,
) -> (Vec<Unit>, Vec<Stream>) {
    let mut units = units.to_vec();
    for a in arrays {
        let u = &mut units[a.unit];
        u.size = a.slot_size * a.count;
        u.align = u.align.max(cls).max(a.slot_align);
        u.natural_align = u.natural_align.max(cls).max(a.slot_align);
    }
    let streams = streams
        .iter()
        .map(|s| {
            let mut s = s.clone();
            if let Some(a) = arrays.iter().find(|a| a.unit == s.unit) {
                let (slot, within) = (s.inner / a.elem_size, s.inner % a.elem_size);
                s.inner = slot * a.slot_size + within;
                s.size = s.size.min(a.elem_size - within).max(1);
            }
            s
        })
        .collect();
    (units, streams)
}

/// Adds the slot type of `a` to `types` (`struct { elem v; }` with `v` aligned to the line,
/// which rounds the slot up to whole lines) and an array of `count` of them; returns the
/// array's id.
pub fn slot_array_type(types: &mut Types<'_>, a: &SlottedArray, cls: u64) -> TypeId {
    let slot = types.push(crate::types::Type {
        name: "",
        kind: Kind::Struct(Composite {
            size: a.slot_size,
            members: vec![Member {
                name: SLOT_MEMBER,
                ty: a.elem,
                bit_offset: 0,
                bitfield_size: 0,
                declared_align: Some(a.slot_align.max(cls) as u32),
            }],
            declared_align: None,
            is_declaration: false,
            origin: None,
        }),
    });
    types.push(crate::types::Type {
        name: "",
        kind: Kind::Array {
            elem: slot,
            count: a.count,
        },
    })
}

/// Gives the members `arrays` name in the composite `ty` their slot array types
/// (`slot_types[i]` for `arrays[i]`).
pub fn retype(ty: &mut crate::types::Type<'_>, arrays: &[SlottedArray], slot_types: &[TypeId]) {
    let (Kind::Struct(c) | Kind::Union(c)) = &mut ty.kind else {
        return;
    };
    for (a, &t) in arrays.iter().zip(slot_types) {
        if let Some(m) = c.members.iter_mut().find(|m| m.name == a.member) {
            m.ty = t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long_array(count: u64) -> (Types<'static>, TypeId, Composite<'static>) {
        let mut t = Types::new(8);
        let long = t.push(crate::types::Type {
            name: "unsigned long",
            kind: Kind::Int {
                size: 8,
                signed: false,
                is_char: false,
                is_bool: false,
            },
        });
        let arr = t.push(crate::types::Type {
            name: "",
            kind: Kind::Array { elem: long, count },
        });
        let c = Composite {
            size: 8 * count + 8,
            members: vec![
                Member {
                    name: "hits",
                    ty: arr,
                    bit_offset: 0,
                    bitfield_size: 0,
                    declared_align: None,
                },
                Member {
                    name: "total",
                    ty: long,
                    bit_offset: 8 * count * 8,
                    bitfield_size: 0,
                    declared_align: None,
                },
            ],
            declared_align: None,
            is_declaration: false,
            origin: None,
        };
        (t, long, c)
    }

    fn unit(name: &str, index: usize, offset: u64, size: u64) -> Unit {
        Unit {
            name: name.to_string(),
            members: vec![name.to_string()],
            member_indices: vec![index],
            offset,
            size,
            align: 8,
            natural_align: 8,
        }
    }

    fn write(unit: usize, inner: u64, cpu: u32) -> Stream {
        Stream {
            unit,
            inner,
            size: 8,
            field: String::new(),
            path: "worker".to_string(),
            reads: 10.0,
            writes: 10.0,
            rmw: 0.0,
            cpus: 1,
            cpu_list: vec![cpu],
            lock: false,
            run_atomic: false,
            under_lock: None,
            cycles_per_run: None,
        }
    }

    #[test]
    fn slots_written_by_different_threads_are_found_and_padded() {
        let (t, long, c) = long_array(8);
        let units = [unit("hits", 0, 0, 64), unit("total", 1, 64, 8)];
        let streams = [write(0, 0, 1), write(0, 8, 2), write(1, 0, 0)];
        let found = per_thread_slots(&t, &c, &units, &streams, 64);
        assert_eq!(found.len(), 1);
        let a = &found[0];
        assert_eq!(
            (a.member.as_str(), a.elem_size, a.slot_size, a.count, a.elem),
            ("hits", 8, 64, 8, long)
        );
        assert_eq!(a.writers, vec![(0, vec![1]), (1, vec![2])]);
        assert_eq!(a.growth(), 448);
        let (pu, ps) = padded(&units, &streams, &found, 64);
        assert_eq!((pu[0].size, pu[0].align), (512, 64));
        // hits[1] moves to the second slot's line, at the start of its element.
        assert_eq!(ps[1].inner, 64);
        assert_eq!(ps[0].inner, 0);
        assert_eq!(ps[2].inner, 0);
    }

    #[test]
    fn one_writer_for_all_slots_or_no_cpu_list_is_no_per_thread_array() {
        let (t, _, c) = long_array(8);
        let units = [unit("hits", 0, 0, 64), unit("total", 1, 64, 8)];
        // The same thread writes both slots.
        let same = [write(0, 0, 1), write(0, 8, 1)];
        assert!(per_thread_slots(&t, &c, &units, &same, 64).is_empty());
        // The evidence does not say which CPUs.
        let mut unnamed = [write(0, 0, 1), write(0, 8, 2)];
        for s in &mut unnamed {
            s.cpu_list.clear();
        }
        assert!(per_thread_slots(&t, &c, &units, &unnamed, 64).is_empty());
        // A scalar member is no array.
        let scalar = [write(1, 0, 1)];
        assert!(per_thread_slots(&t, &c, &units, &scalar, 64).is_empty());
    }

    #[test]
    fn the_slot_type_is_a_line_of_one_aligned_element() {
        let (mut t, long, c) = long_array(4);
        let units = [unit("hits", 0, 0, 32), unit("total", 1, 32, 8)];
        let streams = [write(0, 0, 1), write(0, 24, 2)];
        let found = per_thread_slots(&t, &c, &units, &streams, 64);
        let arr = slot_array_type(&mut t, &found[0], 64);
        assert_eq!(t.size_of(arr), 256);
        let Kind::Array { elem, count: 4 } = t.get(arr).kind else {
            panic!("not an array of 4");
        };
        let slot = t.composite(elem).unwrap();
        assert_eq!(slot.members[0].name, SLOT_MEMBER);
        assert_eq!(slot.members[0].ty, long);
        assert_eq!(slot.members[0].declared_align, Some(64));
        assert_eq!(t.natural_align(elem), 64);
    }
}
