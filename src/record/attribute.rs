//! Which object an address belongs to: a global or static variable (from DWARF, at its
//! address plus the PIE load bias), or a heap block (from the runtime's allocation log),
//! and what it is.
//!
//! A heap block is named by its allocation site (the call's function and `file.c:line`) and
//! by the pointer its address goes into; its element type is that pointer's target type,
//! found, in order: a pointer variable declared on the call's line (`double *buf
//! = malloc(...)`: the static way), or the call's result stored into one after it; the
//! pointer whose address the call gets to store the block's address into
//! (`posix_memalign(&buf, 64, n)`: an out-parameter); the pointer-sized slot (a global, a
//! member of another object) the allocating thread stores into on the call's line in the
//! same function (the dynamic way, from the recorded stores); the struct types the
//! allocating function handles pointers to, when exactly one fits and the recorded accesses
//! to the block do not rule it out (accesses through pointers to other types and none
//! through it, or accesses wider than it: a `struct job` or `std::thread` of the same
//! function that the block is never used as says nothing of it), unless `--heap-type` names
//! a struct the block's size is a multiple of and its uses do not rule out (the user's word
//! wins over the function's types and the access sizes, never over a pointer the code
//! gives the block). A block of structs is an
//! array of them; a block of scalars (`double`, `_Bool`, `size_t`) is an array of scalars,
//! shown per element; a block with no type evidence whose recorded accesses all have one
//! size and are aligned to it is an array of unsigned integers of that size (found by
//! `access size`); any other is *untyped*, shown by its site and byte offsets. A type is
//! never taken from its size alone: a struct of libc's or of unrelated code that happens to
//! have the block's size says nothing about it.

use std::collections::{BTreeMap, HashMap};

use super::debuginfo::{DebugInfo, Elem, ElemKind, ObjType, SiteVariable};
use super::trace::{AllocEvent, Counted};

/// Heap blocks of scalars (or untyped) larger than this are folded into pieces of this
/// size, so that a 128 MiB buffer does not become a 128 MiB "struct".
pub const SCALAR_PIECE: u64 = 4096;

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
    /// The profile type: a struct, or for arrays of scalars and untyped blocks a type
    /// named after the allocation site (`buf@linreg.c:44`) of one piece of the block.
    pub ty: ObjType,
    /// Runtime address of the first element.
    pub base: u64,
    /// Number of elements of `ty` (arrays).
    pub count: u64,
    /// Bytes the object covers (a heap block's size).
    pub len: u64,
    pub origin: Origin,
    /// Lifetime in timestamps (heap blocks; globals live forever).
    pub born: u64,
    pub died: u64,
    /// For arrays of scalars: the element, and the name its elements are shown by.
    pub scalars: Option<(Elem, String)>,
}

impl Object {
    pub fn end(&self) -> u64 {
        self.base.saturating_add(self.len)
    }
    /// Offset of `addr` within its element.
    pub fn type_offset(&self, addr: u64) -> u64 {
        (addr - self.base) % self.ty.size.max(1)
    }
    /// The field name of type offset `offset` in an array of scalars (`buf[3]`).
    pub fn scalar_field(&self, offset: u64) -> Option<String> {
        let (elem, var) = self.scalars.as_ref()?;
        Some(format!("{var}[{}]", offset / elem.size.max(1)))
    }
}

/// How a heap block's element type (or its name) was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FoundBy {
    HeapType,
    Declaration,
    Assignment,
    OutParameter,
    Store,
    Function,
    AccessSize,
    Nothing,
}

impl FoundBy {
    pub fn label(self) -> &'static str {
        match self {
            FoundBy::HeapType => "--heap-type",
            FoundBy::Declaration => "declaration",
            FoundBy::Assignment => "assignment",
            FoundBy::OutParameter => "out-parameter",
            FoundBy::Store => "store",
            FoundBy::Function => "function",
            FoundBy::AccessSize => "access size",
            FoundBy::Nothing => "none",
        }
    }
}

/// What lineup knows about one allocation site.
#[derive(Clone, Debug)]
pub struct SiteInfo {
    /// The variable or member the blocks' addresses go into.
    pub variable: Option<String>,
    pub elem: Option<Elem>,
    pub found_by: FoundBy,
    /// The profile type its blocks were given.
    pub type_name: Option<String>,
    /// Bytes of one element of that type (the piece, for scalars and untyped blocks).
    pub type_size: u64,
    pub blocks: u64,
    pub max_bytes: u64,
}

/// Heap blocks whose type could not be chosen: (size, site) → candidate type names.
pub type Ambiguous = HashMap<(u64, u64), Vec<String>>;

/// How the program used the blocks of one allocation site, from the recorded accesses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlockUse {
    /// Struct name → accesses made through pointers to it ([`DebugInfo::pointer_used_at`]).
    pub structs: HashMap<String, u64>,
    /// Accesses made through pointers to scalars (`size_t *`, `double *`).
    pub scalars: u64,
    /// Access size in bytes → accesses of that size.
    pub sizes: BTreeMap<u64, u64>,
    /// Some access was not aligned to its own size within the block.
    pub misaligned: bool,
}

impl BlockUse {
    /// The one size every access had, when they were all aligned to it: the element size
    /// of an array the program reads and writes whole (`size_t` slots by 8-byte accesses).
    pub fn element_size(&self) -> Option<u64> {
        match (self.sizes.len(), self.sizes.keys().next()) {
            (1, Some(&n)) if !self.misaligned && n > 1 && n.is_power_of_two() && n <= 16 => Some(n),
            _ => None,
        }
    }
}

/// Per allocation site in `sites`, how its blocks were used: every recorded access to a
/// block of `objects` allocated there (`site_of`: an access's return address to its
/// link-time call site).
pub fn block_uses(
    debug: &DebugInfo,
    tally: &[Counted],
    objects: &ObjectMap,
    sites: &std::collections::BTreeSet<u64>,
    site_of: impl Fn(u64) -> u64,
) -> HashMap<u64, BlockUse> {
    let mut out: HashMap<u64, BlockUse> = HashMap::new();
    let mut types_at: HashMap<u64, Option<Elem>> = HashMap::new();
    for k in tally {
        let Some(obj) = objects.lookup(k.addr, None) else {
            continue;
        };
        let Origin::Heap { site } = obj.origin else {
            continue;
        };
        if !sites.contains(&site) {
            continue;
        }
        let u = out.entry(site).or_default();
        let size = u64::from(k.size);
        *u.sizes.entry(size).or_default() += k.count;
        // A summary's address stands for a range of places: its alignment says nothing.
        if !k.summary && size > 0 && !(k.addr - obj.base).is_multiple_of(size) {
            u.misaligned = true;
        }
        let code = site_of(k.pc);
        let elem = types_at
            .entry(code)
            .or_insert_with(|| debug.pointer_used_at(code));
        match elem {
            Some(e) if e.kind == ElemKind::Struct => {
                *u.structs.entry(e.name.clone()).or_default() += k.count;
            }
            Some(_) => u.scalars += k.count,
            None => {}
        }
    }
    out
}

/// The name of an unsigned integer of `size` bytes (an untyped block's element by the size
/// of its accesses).
fn unsigned_of(size: u64) -> String {
    match size {
        16 => "unsigned __int128".to_string(),
        n => format!("uint{}_t", n * 8),
    }
}

/// Typing heap blocks by their allocation sites.
pub struct TypeChooser<'a> {
    /// `--heap-type` names with their sizes.
    pub named: Vec<ObjType>,
    pub debug: &'a DebugInfo,
    /// Per call site: the slot its blocks were seen stored into (the dynamic way).
    pub stored: HashMap<u64, SiteVariable>,
    /// Per call site: how its blocks were used ([`block_uses`]); `None` until known, when
    /// the allocating function's struct types are taken as they fit (the first passes,
    /// which only need the blocks' extents and a guess for stores into them).
    pub uses: Option<HashMap<u64, BlockUse>>,
    memo: HashMap<(u64, u64), Option<(ObjType, u64, Option<(Elem, String)>)>>,
    pub ambiguous: Ambiguous,
    pub sites: BTreeMap<u64, SiteInfo>,
}

impl<'a> TypeChooser<'a> {
    pub fn new(named: Vec<ObjType>, debug: &'a DebugInfo) -> Self {
        TypeChooser {
            named,
            debug,
            stored: HashMap::new(),
            uses: None,
            memo: HashMap::new(),
            ambiguous: HashMap::new(),
            sites: BTreeMap::new(),
        }
    }

    /// Forgets what was decided (after learning `stored`).
    pub fn reset(&mut self) {
        self.memo.clear();
        self.ambiguous.clear();
        self.sites.clear();
    }

    /// The type (element count, and scalar element) of a block of `size` bytes allocated
    /// at link-time address `site`; `None` for an empty block.
    pub fn choose(
        &mut self,
        size: u64,
        site: u64,
    ) -> Option<(ObjType, u64, Option<(Elem, String)>)> {
        let c = match self.memo.get(&(size, site)) {
            Some(c) => c.clone(),
            None => {
                let c = self.decide(size, site);
                self.memo.insert((size, site), c.clone());
                c
            }
        };
        if let Some(info) = self.sites.get_mut(&site) {
            info.blocks += 1;
            info.max_bytes = info.max_bytes.max(size);
            if let Some((t, _, _)) = &c
                && t.size > info.type_size
            {
                info.type_size = t.size;
            }
        }
        c
    }

    /// The pointer its blocks go into, and how that was found.
    fn variable(&mut self, size: u64, site: u64) -> (Option<String>, Option<Elem>, FoundBy) {
        let declared = self.debug.variables_declared_at(site);
        if let Some(v) = declared.iter().find(|v| v.elem.is_some()) {
            return (Some(v.name.clone()), v.elem.clone(), FoundBy::Declaration);
        }
        let assigned = self.debug.variable_assigned_at(site);
        if let Some(v) = assigned.as_ref().filter(|v| v.elem.is_some()) {
            return (Some(v.name.clone()), v.elem.clone(), FoundBy::Assignment);
        }
        let out = self.debug.out_parameter_at(site);
        if let Some(v) = out.as_ref().filter(|v| v.elem.is_some()) {
            return (Some(v.name.clone()), v.elem.clone(), FoundBy::OutParameter);
        }
        if let Some(v) = self.stored.get(&site)
            && v.elem.is_some()
        {
            return (Some(v.name.clone()), v.elem.clone(), FoundBy::Store);
        }
        let name = declared
            .first()
            .map(|v| v.name.clone())
            .or_else(|| assigned.map(|v| v.name))
            .or_else(|| out.map(|v| v.name))
            .or_else(|| self.stored.get(&site).map(|v| v.name.clone()));
        // The struct types the allocating function handles pointers to, when exactly one
        // fits the block and, once the accesses are known, the block was used through
        // pointers to it: `struct ring *q = ...; q = aligned_alloc(64, sizeof *q)`.
        let local = self.debug.pointer_types_at(site);
        let use_of = self.uses.as_ref().map(|u| u.get(&site));
        let used = |t: &ObjType| self.used_as(site, t);
        for exact in [true, false] {
            let fits: Vec<&ObjType> = local
                .iter()
                .filter(|t| t.size > 0 && size >= t.size && size.is_multiple_of(t.size))
                .filter(|t| (size == t.size) == exact)
                .collect();
            let best = fits.iter().map(|t| used(t)).max().unwrap_or(0);
            let top: Vec<&&ObjType> = fits.iter().filter(|t| used(t) == best).collect();
            if best > 0 && top.len() == 1 {
                let t = top[0];
                let elem = Elem {
                    name: t.name.clone(),
                    size: t.size,
                    kind: ElemKind::Struct,
                };
                return (name, Some(elem), FoundBy::Function);
            }
            if best > 0 {
                self.ambiguous
                    .insert((size, site), top.iter().map(|t| t.name.clone()).collect());
                return (name, None, FoundBy::Nothing);
            }
        }
        // Nothing says what it is but what the program does with it: accesses of one size,
        // aligned to it, read and write elements of that size.
        if let Some(n) = use_of
            .flatten()
            .and_then(BlockUse::element_size)
            .filter(|&n| size >= n)
        {
            let elem = Elem {
                name: unsigned_of(n),
                size: n,
                kind: ElemKind::Int,
            };
            return (name, Some(elem), FoundBy::AccessSize);
        }
        (name, None, FoundBy::Nothing)
    }

    /// How far the recorded uses of `site`'s blocks allow them to be arrays of `t`: the
    /// accesses made through pointers to it (1 when the uses are not known or say nothing).
    /// Accesses through pointers to the struct count for it; accesses through pointers to
    /// anything else, and none through it, rule it out (0), and so do accesses wider than
    /// the struct (8-byte loads are no `struct { char x, y; }`); accesses whose pointer the
    /// code does not tell (a register no location list describes) say nothing either way.
    fn used_as(&self, site: u64, t: &ObjType) -> u64 {
        match self.uses.as_ref().map(|u| u.get(&site)) {
            None | Some(None) => 1,
            Some(Some(u)) if u.sizes.keys().any(|&n| n > t.size) => 0,
            Some(Some(u)) => match u.structs.get(&t.name) {
                Some(&n) => n,
                None if u.scalars > 0 || !u.structs.is_empty() => 0,
                None => 1,
            },
        }
    }

    fn decide(&mut self, size: u64, site: u64) -> Option<(ObjType, u64, Option<(Elem, String)>)> {
        if size == 0 {
            return None;
        }
        // `--heap-type` names the blocks lineup cannot type from the code: a pointer the
        // code declares, assigns or passes for the block says what it is, whichever named
        // struct its size happens to fit (`POINT_T *points = malloc(n * 2)` of 2,000,000
        // bytes is no array of a 64-byte struct), and so do its uses when they rule the
        // named struct out.
        let (variable, elem, found_by) = self.variable(size, site);
        let from_code = elem.is_some()
            && matches!(
                found_by,
                FoundBy::Declaration | FoundBy::Assignment | FoundBy::OutParameter | FoundBy::Store
            );
        let named = (!from_code)
            .then(|| {
                let fits = |t: &&ObjType| {
                    t.size > 0 && size.is_multiple_of(t.size) && self.used_as(site, t) > 0
                };
                let exact = self.named.iter().filter(|t| t.size == size).find(fits);
                exact.or_else(|| self.named.iter().find(|t| size > t.size && fits(t)))
            })
            .flatten()
            .cloned();
        let (elem, found_by) = match named {
            Some(t) => (
                Some(Elem {
                    name: t.name,
                    size: t.size,
                    kind: ElemKind::Struct,
                }),
                FoundBy::HeapType,
            ),
            None => (elem, found_by),
        };
        if found_by == FoundBy::HeapType {
            self.ambiguous.remove(&(size, site));
        }
        let typed = match &elem {
            Some(e) if e.kind == ElemKind::Struct && e.size > 0 && size >= e.size => {
                let t = ObjType {
                    name: e.name.clone(),
                    size: e.size,
                };
                (t, size / e.size, None)
            }
            _ => {
                // Scalars, or nothing known: the block by its site, in pieces.
                let (unit, shown) = match &elem {
                    Some(e) if e.kind != ElemKind::Struct && e.size > 0 && size >= e.size => {
                        (e.size, Some(e.clone()))
                    }
                    _ => (1, None),
                };
                let piece = (size.min(SCALAR_PIECE) / unit).max(1) * unit;
                let place = self.site_label(site);
                let var = variable.clone().unwrap_or_else(|| "heap".to_string());
                let t = ObjType {
                    name: format!("{var}@{place}"),
                    size: piece,
                };
                // Elements are shown by the variable, or by the member's own name (`counts`
                // of `tally.counts`): a dotted name would read as a path into a struct.
                let member = variable
                    .as_deref()
                    .map(|v| v.rsplit('.').next().unwrap_or(v).to_string())
                    .unwrap_or_else(|| "elements".to_string());
                let scalars = shown.map(|e| (e, member));
                (t, size.div_ceil(piece), scalars)
            }
        };
        let entry = self.sites.entry(site).or_insert_with(|| SiteInfo {
            variable: variable.clone(),
            elem: elem
                .clone()
                .filter(|e| e.kind == ElemKind::Struct || size >= e.size),
            found_by,
            type_name: Some(typed.0.name.clone()),
            type_size: 0,
            blocks: 0,
            max_bytes: 0,
        });
        if entry.type_name.is_none() {
            entry.type_name = Some(typed.0.name.clone());
        }
        Some(typed)
    }

    /// `file.c:line` of a call site, else `function+offset`, else its address.
    fn site_label(&self, site: u64) -> String {
        if let Some((file, line)) = self.debug.alloc_line(site) {
            return format!("{file}:{line}");
        }
        let r = self.debug.resolve(site);
        match (r.symbol, r.offset) {
            (Some(s), Some(o)) => format!("{s}+{o}"),
            _ => format!("{site:#x}"),
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
        site_of: impl Fn(&AllocEvent) -> u64,
    ) -> ObjectMap {
        let mut m = ObjectMap::default();
        for g in &debug.globals {
            m.globals.push(Object {
                ty: g.elem.clone(),
                base: g.addr.wrapping_add(bias),
                count: g.count.max(1),
                len: g.size(),
                origin: Origin::Global(g.name.clone()),
                born: 0,
                died: u64::MAX,
                scalars: None,
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
                blocks.push((a.addr, a.size, site_of(a), a.tsc, u64::MAX));
            }
        }
        for (base, size, site, born, died) in blocks {
            if let Some((ty, count, scalars)) = chooser.choose(size, site) {
                if chooser.sites.get(&site).is_some_and(|s| s.elem.is_some()) {
                    m.heap_typed += 1;
                } else {
                    m.heap_untyped += 1;
                }
                m.heap.push(Object {
                    ty,
                    base,
                    count,
                    len: size,
                    origin: Origin::Heap { site },
                    born,
                    died,
                    scalars,
                });
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

    /// The global or static holding `addr`.
    fn global_at(&self, addr: u64) -> Option<&Object> {
        let i = self.globals.partition_point(|o| o.base <= addr);
        (i > 0 && addr < self.globals[i - 1].end()).then(|| &self.globals[i - 1])
    }

    /// The heap blocks that ever held `addr`, last-born base first.
    fn heap_holding(&self, addr: u64) -> impl Iterator<Item = &Object> {
        let start = self.heap.partition_point(|o| o.base <= addr);
        (0..start)
            .rev()
            .take_while(move |&j| self.heap_max_end[j] > addr)
            .map(|j| &self.heap[j])
            .filter(move |o| addr < o.end())
    }

    /// The object holding `addr` that a thread alive over `[start, end)` (its first to
    /// its last traced moment) touched: of the blocks that held the address, the one whose
    /// life overlaps the thread's most. The tally counts a thread's accesses to an address
    /// without their times; a heap address reused after a free (one worker's private
    /// block freed, the next worker's allocated at the same place) is two objects, each
    /// used by the thread that lived beside it, not one object two threads share.
    pub fn lookup_during(&self, addr: u64, life: Option<(u64, u64)>) -> Option<&Object> {
        let Some((start, end)) = life.filter(|&(s, e)| s < e) else {
            return self.lookup(addr, None);
        };
        if let Some(g) = self.global_at(addr) {
            return Some(g);
        }
        // (overlap with the thread's life, the block's life, the block)
        let mut best: Option<(u64, u64, &Object)> = None;
        for o in self.heap_holding(addr) {
            let overlap = o.died.min(end).saturating_sub(o.born.max(start));
            let life = o.died.saturating_sub(o.born);
            if best.is_none_or(|(bo, bl, _)| (overlap, life) > (bo, bl)) {
                best = Some((overlap, life, o));
            }
        }
        best.map(|b| b.2)
    }

    /// The object holding `addr`; at time `tsc` when known (heap addresses are reused).
    pub fn lookup(&self, addr: u64, tsc: Option<u64>) -> Option<&Object> {
        if let Some(g) = self.global_at(addr) {
            return Some(g);
        }
        let mut best: Option<&Object> = None;
        for o in self.heap_holding(addr) {
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
    fn named_types_win_and_nothing_is_typed_by_size_alone() {
        let d = DebugInfo::default();
        let mut c = TypeChooser::new(vec![t("b", 64)], &d);
        assert_eq!(c.choose(64, 0).unwrap().0, t("b", 64));
        assert_eq!(c.choose(256, 0).unwrap().1, 4);
        // No --heap-type fits and no pointer is known: untyped, named by the site, not by
        // whichever struct has 32 bytes.
        let (ty, count, scalars) = c.choose(32, 0x1234).unwrap();
        assert_eq!(ty, t("heap@0x1234", 32));
        assert_eq!((count, scalars), (1, None));
        assert_eq!(c.sites[&0x1234].found_by, FoundBy::Nothing);
        // A large untyped block is folded into pieces.
        let (ty, count, _) = c.choose(3 * SCALAR_PIECE + 1, 0x99).unwrap();
        assert_eq!((ty.size, count), (SCALAR_PIECE, 4));
        assert!(c.choose(0, 0x99).is_none());
    }

    #[test]
    fn a_wrappers_caller_is_the_only_one_then_the_one_that_fits_then_the_one_used() {
        let caller = |site, name: Option<(&str, u64)>| WrapperCaller {
            site,
            through: vec!["xmalloc".into()],
            elem: name.map(|(n, size)| Elem {
                name: n.into(),
                size,
                kind: ElemKind::Struct,
            }),
        };
        let none = HashMap::new();
        let one = [caller(1, None)];
        assert_eq!(
            choose_caller(&one, 40, &none).map(|(c, how)| (c.site, how)),
            Some((1, "only caller"))
        );
        let two = [
            caller(1, Some(("tally", 16))),
            caller(2, Some(("sample", 24))),
        ];
        // 32 bytes: two tallies, not a whole number of samples.
        assert_eq!(
            choose_caller(&two, 32, &none).map(|(c, how)| (c.site, how)),
            Some((1, "size"))
        );
        // 48 bytes fit both: the accesses through `struct sample *` decide, and nothing
        // decides without them, or when both are used alike.
        assert!(choose_caller(&two, 48, &none).is_none());
        let used: HashMap<String, u64> = [("sample".to_string(), 9), ("tally".to_string(), 2)]
            .into_iter()
            .collect();
        assert_eq!(
            choose_caller(&two, 48, &used).map(|(c, how)| (c.site, how)),
            Some((2, "use"))
        );
        let alike: HashMap<String, u64> = [("sample".to_string(), 5), ("tally".to_string(), 5)]
            .into_iter()
            .collect();
        assert!(choose_caller(&two, 48, &alike).is_none());
        // A size that fits neither: nothing told.
        assert!(choose_caller(&two, 20, &used).is_none());
    }

    #[test]
    fn an_untyped_block_takes_the_one_aligned_size_of_its_accesses() {
        let d = DebugInfo::default();
        let used = |sizes: &[(u64, u64)], misaligned| BlockUse {
            structs: HashMap::new(),
            scalars: 0,
            sizes: sizes.iter().copied().collect(),
            misaligned,
        };
        let mut c = TypeChooser::new(Vec::new(), &d);
        c.uses = Some(
            [
                (1, used(&[(8, 40)], false)),
                (2, used(&[(8, 40), (4, 1)], false)),
                (3, used(&[(8, 40)], true)),
            ]
            .into_iter()
            .collect(),
        );
        let (ty, count, scalars) = c.choose(32, 1).unwrap();
        assert_eq!((ty.size, count), (32, 1));
        let (elem, member) = scalars.unwrap();
        assert_eq!((elem.name.as_str(), elem.size), ("uint64_t", 8));
        assert_eq!(member, "elements");
        assert_eq!(c.sites[&1].found_by, FoundBy::AccessSize);
        // Two sizes, or accesses across elements: nothing says what the elements are.
        for site in [2, 3, 4] {
            let (_, _, scalars) = c.choose(32, site).unwrap();
            assert!(scalars.is_none(), "site {site}");
            assert_eq!(c.sites[&site].found_by, FoundBy::Nothing, "site {site}");
        }
    }

    #[test]
    fn reused_heap_addresses_resolve_by_time() {
        let d = DebugInfo::default();
        let mut c = TypeChooser::new(vec![t("small", 16), t("big", 128)], &d);
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
        let m = ObjectMap::build(&d, 0, &allocs, &mut c, |a| a.pc);
        assert_eq!(m.lookup(0x1008, Some(1)).unwrap().ty.name, "small");
        assert_eq!(m.lookup(0x1008, Some(5)).unwrap().ty.name, "big");
        assert_eq!(m.lookup(0x1040, None).unwrap().ty.name, "big");
        assert!(m.lookup(0x2000, None).is_none());
        assert_eq!(m.lookup(0x1048, None).unwrap().type_offset(0x1048), 0x48);
        // Without times, by the life of the thread that touched the address: one worker's
        // block freed, the next worker's allocated at the same place.
        let allocs = [
            ev(10, 0x1000, 64, false),
            ev(20, 0x1000, 0, true),
            ev(25, 0x1000, 64, false),
            ev(40, 0x1000, 0, true),
        ];
        let m = ObjectMap::build(&d, 0, &allocs, &mut c, |a| a.pc);
        assert_eq!(m.lookup_during(0x1008, Some((9, 21))).unwrap().born, 10);
        assert_eq!(m.lookup_during(0x1008, Some((22, 41))).unwrap().born, 25);
        // A thread alive over both (main): the longer-lived block, as without a time.
        assert_eq!(m.lookup_during(0x1008, Some((0, 100))).unwrap().born, 25);
        assert_eq!(m.lookup_during(0x1008, None).unwrap().born, 25);
    }
}

/// Allocation wrappers: functions that allocate a block and hand it back to their caller
/// (`xmalloc`, Phoenix's `mem_malloc`, a `safe_malloc` that checks for NULL). The runtime
/// logs the return address of the allocator's call, which for a wrapper is the same for
/// every block of the program; the wrapper's callers say what each block is. A function is
/// a wrapper when `--alloc-wrapper` names it, or when its own code gives the block no type
/// (no typed pointer declared on the call's line or assigned from it, no struct pointer in
/// the function) and the result reaches its `ret` ([`DebugInfo::returns_result`]). A typed
/// factory (`struct node *new_node(void)`) is not one: its own site names the block.
pub struct Wrappers<'a> {
    debug: &'a DebugInfo,
    named: Vec<String>,
    memo: HashMap<u64, Option<(u64, String)>>,
}

/// A wrapper's caller: the call instruction (link-time), the wrappers between it and the
/// allocator (innermost first), and the element its pointer says the block is.
#[derive(Clone, Debug)]
pub struct WrapperCaller {
    pub site: u64,
    pub through: Vec<String>,
    pub elem: Option<Elem>,
}

impl<'a> Wrappers<'a> {
    pub fn new(debug: &'a DebugInfo, named: &[String]) -> Self {
        Wrappers {
            debug,
            named: named.to_vec(),
            memo: HashMap::new(),
        }
    }

    /// The wrapper (function start and name) whose allocation call is at `site`.
    pub fn wrapper_at(&mut self, site: u64) -> Option<(u64, String)> {
        if let Some(w) = self.memo.get(&site) {
            return w.clone();
        }
        let debug = self.debug;
        let w = debug.function_at(site).and_then(|(start, name)| {
            let named = self.named.iter().any(|n| n == name);
            let typed = || {
                debug
                    .variables_declared_at(site)
                    .iter()
                    .any(|v| v.elem.is_some())
                    || debug
                        .variable_assigned_at(site)
                        .is_some_and(|v| v.elem.is_some())
                    || !debug.pointer_types_at(site).is_empty()
            };
            // `main` hands nothing back to a caller that says more.
            (named || (name != "main" && !typed() && debug.returns_result(site)))
                .then(|| (start, name.to_string()))
        });
        self.memo.insert(site, w.clone());
        w
    }

    /// The calls that reach the allocation at `site` through wrappers, outermost first:
    /// empty when `site` is not in a wrapper. A wrapper called from another wrapper
    /// (`xcalloc` calling `xmalloc`) is followed to the callers of the outer one.
    pub fn callers(&mut self, site: u64) -> Vec<WrapperCaller> {
        let mut out = Vec::new();
        self.collect(site, Vec::new(), 0, &mut out);
        out
    }

    fn collect(
        &mut self,
        site: u64,
        through: Vec<String>,
        depth: u32,
        out: &mut Vec<WrapperCaller>,
    ) {
        let Some((start, name)) = self.wrapper_at(site) else {
            if !through.is_empty() {
                let debug = self.debug;
                let elem = debug
                    .variables_declared_at(site)
                    .into_iter()
                    .find_map(|v| v.elem)
                    .or_else(|| debug.variable_assigned_at(site).and_then(|v| v.elem));
                out.push(WrapperCaller {
                    site,
                    through,
                    elem,
                });
            }
            return;
        };
        // gcc's clones (`mem_calloc.constprop.0`, `.isra.0`) by the source's name.
        let name = name.split('.').next().unwrap_or(&name).to_string();
        if depth >= 4 || through.contains(&name) {
            return;
        }
        let mut through = through;
        through.push(name);
        for &c in self.debug.calls_to(start) {
            self.collect(c, through.clone(), depth + 1, out);
        }
    }
}

/// Which of a wrapper's callers allocated one block of `size` bytes: the only caller; else
/// the only one whose pointer's element fits the size (`size`); else, of those that fit, the
/// one whose element struct the block is accessed through most (`uses`: struct name →
/// accesses through pointers to it, [`DebugInfo::pointer_used_at`]; `use`). `None`: nothing
/// tells them apart.
pub fn choose_caller<'c>(
    callers: &'c [WrapperCaller],
    size: u64,
    uses: &HashMap<String, u64>,
) -> Option<(&'c WrapperCaller, &'static str)> {
    if callers.len() == 1 {
        return Some((&callers[0], "only caller"));
    }
    let fits: Vec<&WrapperCaller> = callers
        .iter()
        .filter(|c| {
            c.elem
                .as_ref()
                .is_some_and(|e| e.size > 0 && size >= e.size && size.is_multiple_of(e.size))
        })
        .collect();
    if fits.len() == 1 {
        return Some((fits[0], "size"));
    }
    let score = |c: &WrapperCaller| {
        c.elem
            .as_ref()
            .filter(|e| e.kind == ElemKind::Struct)
            .and_then(|e| uses.get(&e.name))
            .copied()
            .unwrap_or(0)
    };
    let best = fits.iter().map(|c| score(c)).max().unwrap_or(0);
    let top: Vec<&&WrapperCaller> = fits.iter().filter(|c| score(c) == best).collect();
    (best > 0 && top.len() == 1).then(|| (*top[0], "use"))
}
