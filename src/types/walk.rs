//! The one bound on every walk over the type graph.
//!
//! Types refer to each other by id, and a corrupt or hostile input (BTF or DWARF bytes, a
//! fuzzer's output) can make those references cycle: a typedef naming itself, a struct whose
//! member is the struct, an array of itself, a prototype taking pointers to itself twice
//! (which doubles the work at every level). Every recursion over types (sizes, alignment,
//! layout, names, the pahole and C printers, the readers' resolution) goes through a
//! [`Guard`], and every loop that follows one link at a time runs over [`chain`], so no
//! input can make lineup recurse without end or do exponential work. Real types never come
//! near the bounds: the kernel's deepest nesting is about 10 levels.

use super::{Kind, TypeId, Types};

/// Deepest a walk may go: levels of recursion, or links followed in a chain.
pub const MAX_DEPTH: usize = 64;

/// Most steps one walk may take in all, whatever its shape.
pub const MAX_STEPS: usize = 1 << 14;

/// Depth and work done by one walk over the type graph.
#[derive(Clone, Debug)]
pub struct Guard {
    depth: usize,
    steps: usize,
    max_steps: usize,
    tripped: bool,
}

impl Default for Guard {
    fn default() -> Self {
        Guard::new()
    }
}

impl Guard {
    pub fn new() -> Self {
        Guard::with_steps(MAX_STEPS)
    }

    /// A guard allowing `max_steps` steps (a printer's budget per member).
    pub fn with_steps(max_steps: usize) -> Self {
        Guard {
            depth: 0,
            steps: 0,
            max_steps,
            tripped: false,
        }
    }

    /// Goes one level deeper. False, with the depth unchanged, when the walk is already at
    /// [`MAX_DEPTH`] or has spent its steps: the caller stops there (and prints a marker
    /// or returns a neutral value). Each true must be paired with a [`Guard::leave`].
    ///
    /// A refusal costs a step too: a prototype with thousands of parameters that point
    /// back at it is refused once per parameter at the deepest level, and each refusal
    /// prints a marker; without the charge a printer's 4096 steps made 262 MB of markers.
    #[must_use]
    pub fn enter(&mut self) -> bool {
        if self.depth >= MAX_DEPTH || self.steps >= self.max_steps {
            self.tripped = true;
            self.steps = self.steps.saturating_add(1);
            return false;
        }
        self.depth += 1;
        self.steps += 1;
        true
    }

    pub fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Whether the walk has spent its steps: every further [`Guard::enter`] is refused, so
    /// a loop over many children (a prototype's parameters) stops instead of marking each.
    pub fn spent(&self) -> bool {
        self.steps >= self.max_steps
    }

    /// Current depth: how many `enter`s are not yet left.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Whether a bound stopped the walk at least once (the input has a cycle or is absurd).
    pub fn tripped(&self) -> bool {
        self.tripped
    }

    /// Starts a fresh step budget (the printer: per member), keeping depth and `tripped`.
    pub fn refill(&mut self) {
        self.steps = 0;
    }

    /// Runs `f` one level deeper, or returns `stopped` when a bound is reached.
    pub fn nested<T>(&mut self, stopped: T, f: impl FnOnce(&mut Guard) -> T) -> T {
        if !self.enter() {
            return stopped;
        }
        let out = f(self);
        self.leave();
        out
    }
}

/// The iterations a loop that follows one link at a time (typedef to target, array to
/// element) may take.
pub fn chain() -> std::ops::Range<usize> {
    0..MAX_DEPTH
}

/// A type that contains itself by value, or None (every real input: no C type can). Follows
/// only the edges that hold a value in place (members, array elements, typedefs,
/// qualifiers, type tags), never pointers; each type is visited once (iterative depth-first
/// search, so a deep chain cannot overflow the stack). Readers refuse such input before any
/// walk sees it.
pub fn value_cycle(types: &Types<'_>) -> Option<TypeId> {
    const NEW: u8 = 0;
    const OPEN: u8 = 1;
    const DONE: u8 = 2;
    let n = types.types.len();
    let mut state = vec![NEW; n];
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if state[root] != NEW {
            continue;
        }
        state[root] = OPEN;
        stack.push((root, 0));
        while let Some(&(id, k)) = stack.last() {
            match value_edge(types, id, k) {
                Some(child) => {
                    if let Some(top) = stack.last_mut() {
                        top.1 += 1;
                    }
                    match state.get(child) {
                        Some(&OPEN) => return Some(child as TypeId),
                        Some(&NEW) => {
                            state[child] = OPEN;
                            stack.push((child, 0));
                        }
                        _ => {}
                    }
                }
                None => {
                    state[id] = DONE;
                    stack.pop();
                }
            }
        }
    }
    None
}

/// The `k`-th type that type `id` holds by value.
fn value_edge(types: &Types<'_>, id: usize, k: usize) -> Option<usize> {
    let target = match &types.types[id].kind {
        Kind::Typedef { target }
        | Kind::Qualified { target, .. }
        | Kind::TypeTag { target, .. } => (k == 0).then_some(*target),
        Kind::Array { elem, .. } => (k == 0).then_some(*elem),
        Kind::Struct(c) | Kind::Union(c) => c.members.get(k).map(|m| m.ty),
        _ => None,
    };
    target.map(|t| t as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_and_steps_are_bounded() {
        let mut g = Guard::new();
        fn down(g: &mut Guard) -> usize {
            g.nested(0, |g| 1 + down(g))
        }
        assert_eq!(down(&mut g), MAX_DEPTH);
        assert!(g.tripped());
        assert_eq!(g.depth(), 0);
        // Two branches per level: the step budget stops the exponential blow-up.
        let mut g = Guard::with_steps(1000);
        fn tree(g: &mut Guard) -> usize {
            g.nested(0, |g| 1 + tree(g) + tree(g))
        }
        let n = tree(&mut g);
        assert!(n > 0 && n <= 1000, "{n}");
        assert!(g.spent());
        // Refusals cost a step: a walk refused again and again at the bottom (a prototype's
        // thousands of parameters) spends its budget, and then everything is refused.
        let mut g = Guard::with_steps(1000);
        for _ in 0..MAX_DEPTH {
            assert!(g.enter());
        }
        let mut refused = 0;
        while !g.spent() {
            assert!(!g.enter());
            refused += 1;
        }
        assert_eq!(refused, 1000 - MAX_DEPTH);
        for _ in 0..MAX_DEPTH {
            g.leave();
        }
        assert!(!g.enter() && g.depth() == 0);
    }
}
