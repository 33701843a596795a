//! Which object an address belongs to: a global or static variable (from DWARF, at its
//! address plus the PIE load bias), or a heap block (from the runtime's allocation log),
//! and which struct type that object is.
//!
//! A heap block's type is chosen, in order: by `--type` (a block whose size is the type's
//! size or a multiple of it: an array); by the struct types the allocating function handles
//! pointers to (its return type, parameters and locals, `struct queue *q = malloc(sizeof
//! *q)`), when exactly one of them has the block's size; by the program's struct types of
//! exactly that size, when only one name has it. Otherwise the block stays unattributed and
//! the summary says which sizes and sites were ambiguous, so that `--type` can name them.

use std::collections::{BTreeSet, HashMap};

use super::debuginfo::{DebugInfo, ObjType};
use super::trace::AllocEvent;

/// Where an object came from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// A global or static variable.
    Global(String),
    /// A heap block allocated at `site` (link-time address of the call).
    Heap { site: u64 },
}

#[derive(Clone, Debug)]
pub struct Object {
    pub ty: ObjType,
    /// Runtime address of the first element.
    pub base: u64,
    /// Number of elements of `ty` (arrays).
    pub count: u64,
    pub origin: Origin,
    /// Lifetime in timestamps (heap blocks; globals live forever).
    pub born: u64,
    pub died: u64,
}

impl Object {
    pub fn end(&self) -> u64 {
        self.base
            .saturating_add(self.ty.size.saturating_mul(self.count.max(1)))
    }
    /// Offset of `addr` within its element.
    pub fn type_offset(&self, addr: u64) -> u64 {
        (addr - self.base) % self.ty.size.max(1)
    }
}

/// Heap blocks whose type could not be chosen: (size, site) → candidate type names.
pub type Ambiguous = HashMap<(u64, u64), Vec<String>>;

/// Choosing a struct type for a heap block of some size allocated at some site.
pub struct TypeChooser<'a> {
    /// `--type` names with their sizes.
    pub named: Vec<ObjType>,
    /// Sizes of every named struct/union of the program, by size.
    pub by_size: HashMap<u64, BTreeSet<String>>,
    pub debug: &'a DebugInfo,
    memo: HashMap<(u64, u64), Option<(ObjType, u64)>>,
    pub ambiguous: Ambiguous,
}

impl<'a> TypeChooser<'a> {
    pub fn new(
        named: Vec<ObjType>,
        by_size: HashMap<u64, BTreeSet<String>>,
        debug: &'a DebugInfo,
    ) -> Self {
        TypeChooser {
            named,
            by_size,
            debug,
            memo: HashMap::new(),
            ambiguous: HashMap::new(),
        }
    }

    /// The type (and element count) of a block of `size` bytes allocated at link-time
    /// address `site`.
    pub fn choose(&mut self, size: u64, site: u64) -> Option<(ObjType, u64)> {
        if let Some(c) = self.memo.get(&(size, site)) {
            return c.clone();
        }
        let c = self.decide(size, site);
        self.memo.insert((size, site), c.clone());
        c
    }

    fn decide(&mut self, size: u64, site: u64) -> Option<(ObjType, u64)> {
        if size == 0 {
            return None;
        }
        let fits = |t: &ObjType| -> Option<u64> {
            if t.size == 0 {
                None
            } else if size == t.size {
                Some(1)
            } else if size > t.size && size.is_multiple_of(t.size) {
                Some(size / t.size)
            } else {
                None
            }
        };
        for t in &self.named {
            if let Some(n) = fits(t) {
                return Some((t.clone(), n));
            }
        }
        let local = self.debug.pointer_types_at(site);
        for exact in [true, false] {
            let names: BTreeSet<&ObjType> = local
                .iter()
                .filter(|t| fits(t).is_some_and(|n| (n == 1) == exact))
                .collect();
            if names.len() == 1 {
                let t = names.into_iter().next().expect("one").clone();
                let n = fits(&t).expect("fits");
                return Some((t, n));
            }
        }
        match self.by_size.get(&size) {
            Some(names) if names.len() == 1 => {
                let name = names.iter().next().expect("one").clone();
                Some((ObjType { name, size }, 1))
            }
            Some(names) => {
                self.ambiguous
                    .insert((size, site), names.iter().take(6).cloned().collect());
                None
            }
            None => {
                if !local.is_empty() {
                    self.ambiguous
                        .insert((size, site), local.iter().map(|t| t.name.clone()).collect());
                }
                None
            }
        }
    }
}

/// Every attributed object of one process, looked up by address.
#[derive(Default)]
pub struct ObjectMap {
    globals: Vec<Object>,
    heap: Vec<Object>,
    /// Per heap index: the largest end of any block at or before it (stabbing queries).
    heap_max_end: Vec<u64>,
    /// Heap blocks seen and left without a type.
    pub heap_untyped: u64,
    pub heap_typed: u64,
}

impl ObjectMap {
    /// `bias`: the PIE load bias; `allocs`: the process's allocation log; `site_of` maps a
    /// runtime return address to a link-time call site.
    pub fn build(
        debug: &DebugInfo,
        bias: u64,
        allocs: &[AllocEvent],
        chooser: &mut TypeChooser<'_>,
        site_of: impl Fn(u64) -> u64,
    ) -> ObjectMap {
        let mut m = ObjectMap::default();
        for g in &debug.globals {
            m.globals.push(Object {
                ty: g.elem.clone(),
                base: g.addr.wrapping_add(bias),
                count: g.count.max(1),
                origin: Origin::Global(g.name.clone()),
                born: 0,
                died: u64::MAX,
            });
        }
        m.globals.sort_by_key(|o| o.base);
        m.globals.dedup_by_key(|o| o.base);

        let mut order: Vec<&AllocEvent> = allocs.iter().collect();
        order.sort_by_key(|a| a.tsc);
        let mut open: HashMap<u64, usize> = HashMap::new();
        let mut blocks: Vec<(u64, u64, u64, u64, u64)> = Vec::new(); // base, size, site, born, died
        for a in order {
            if a.free {
                if let Some(i) = open.remove(&a.addr) {
                    blocks[i].4 = a.tsc;
                }
            } else {
                if let Some(i) = open.remove(&a.addr) {
                    // Freed without our seeing it (a free from uninstrumented startup code).
                    blocks[i].4 = a.tsc;
                }
                open.insert(a.addr, blocks.len());
                blocks.push((a.addr, a.size, site_of(a.pc), a.tsc, u64::MAX));
            }
        }
        for (base, size, site, born, died) in blocks {
            match chooser.choose(size, site) {
                Some((ty, count)) => {
                    m.heap_typed += 1;
                    m.heap.push(Object {
                        ty,
                        base,
                        count,
                        origin: Origin::Heap { site },
                        born,
                        died,
                    });
                }
                None => m.heap_untyped += 1,
            }
        }
        m.heap.sort_by_key(|o| o.base);
        let mut max_end = 0;
        m.heap_max_end = m
            .heap
            .iter()
            .map(|o| {
                max_end = max_end.max(o.end());
                max_end
            })
            .collect();
        m
    }

    /// The object holding `addr`; at time `tsc` when known (heap addresses are reused).
    pub fn lookup(&self, addr: u64, tsc: Option<u64>) -> Option<&Object> {
        let i = self.globals.partition_point(|o| o.base <= addr);
        if i > 0 && addr < self.globals[i - 1].end() {
            return Some(&self.globals[i - 1]);
        }
        let mut j = self.heap.partition_point(|o| o.base <= addr);
        let mut best: Option<&Object> = None;
        while j > 0 && self.heap_max_end[j - 1] > addr {
            let o = &self.heap[j - 1];
            j -= 1;
            if addr >= o.end() {
                continue;
            }
            match tsc {
                Some(t) if o.born <= t && t < o.died => return Some(o),
                Some(_) => {}
                None => {
                    // Without a time: the longest-lived block that held the address.
                    let life = |o: &Object| o.died.saturating_sub(o.born);
                    if best.is_none_or(|b| life(o) > life(b)) {
                        best = Some(o);
                    }
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, size: u64) -> ObjType {
        ObjType {
            name: name.into(),
            size,
        }
    }

    #[test]
    fn named_types_win_and_arrays_count_elements() {
        let d = DebugInfo::default();
        let mut by_size = HashMap::new();
        by_size.insert(64, BTreeSet::from(["a".to_string(), "b".to_string()]));
        by_size.insert(32, BTreeSet::from(["only".to_string()]));
        let mut c = TypeChooser::new(vec![t("b", 64)], by_size, &d);
        assert_eq!(c.choose(64, 0), Some((t("b", 64), 1)));
        assert_eq!(c.choose(256, 0), Some((t("b", 64), 4)));
        assert_eq!(c.choose(32, 0), Some((t("only", 32), 1)));
        let mut c = TypeChooser::new(vec![], c.by_size.clone(), &d);
        assert_eq!(c.choose(64, 7), None);
        assert_eq!(
            c.ambiguous[&(64, 7)],
            vec!["a".to_string(), "b".to_string()]
        );
    }

    #[test]
    fn reused_heap_addresses_resolve_by_time() {
        let d = DebugInfo::default();
        let mut by_size = HashMap::new();
        by_size.insert(16, BTreeSet::from(["small".to_string()]));
        by_size.insert(128, BTreeSet::from(["big".to_string()]));
        let mut c = TypeChooser::new(vec![], by_size, &d);
        let ev = |tsc, addr, size, free| AllocEvent {
            tsc,
            thread: 0,
            addr,
            size,
            pc: 0,
            free,
        };
        let allocs = [
            ev(1, 0x1000, 16, false),
            ev(2, 0x1000, 0, true),
            ev(3, 0x1000, 128, false),
        ];
        let m = ObjectMap::build(&d, 0, &allocs, &mut c, |pc| pc);
        assert_eq!(m.lookup(0x1008, Some(1)).unwrap().ty.name, "small");
        assert_eq!(m.lookup(0x1008, Some(5)).unwrap().ty.name, "big");
        assert_eq!(m.lookup(0x1040, None).unwrap().ty.name, "big");
        assert!(m.lookup(0x2000, None).is_none());
        assert_eq!(m.lookup(0x1048, None).unwrap().type_offset(0x1048), 0x48);
    }
}
