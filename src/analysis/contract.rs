//! Layout contracts: what a fixed layout promises (these members on separate cache lines, this
//! group within k lines, at most N bytes), checked against any later build of the struct.
//!
//! Kernel maintainers guard a few layouts with `__cacheline_group_begin/end` and
//! `CACHELINE_ASSERT_GROUP_*`; most structs have no guard and fixes regress silently when a
//! member is added. A contract is the guard for those: a small TOML file written by
//! `lineup optimize --contract` or by hand, checked by `lineup check` in CI, and emitted as C
//! static asserts for the header itself. Pure: no I/O.

use serde::{Deserialize, Serialize};

use crate::layout::{Field, Layout};

/// Version of the contract file format; bump on incompatible changes.
pub const CONTRACT_SCHEMA: u32 = 1;

/// Most members a contract may name, over all its rules: each is looked up and may be a line
/// of output. Contracts written by `optimize --contract` name tens.
pub const MAX_CONTRACT_MEMBERS: usize = 16_384;

/// Most member pairs a contract's rules may relate: a `separate` rule of n members checks
/// n(n-1)/2 pairs, a group of n members n² (one static assert each with `--asserts`). A
/// contract of 100,000 members in one rule was 5 * 10^9 pairs (5.6 GB of violations).
pub const MAX_CONTRACT_PAIRS: u64 = 1 << 18;

/// A layout contract for one struct.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Contract {
    /// Format version ([`CONTRACT_SCHEMA`]).
    pub schema: u32,
    /// The struct or union the contract is about.
    #[serde(rename = "type")]
    pub type_name: String,
    /// The line size the rules are stated in.
    #[serde(default = "default_line")]
    pub cacheline_size: u64,
    /// At most this many bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<u64>,
    /// At most this many cache lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lines: Option<u64>,
    /// Members of each set lie on pairwise different cache lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub separate: Vec<Separate>,
    /// Members of each group lie within `max_lines` consecutive cache lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group: Vec<Group>,
    /// Members that share their cache lines with no other member.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alone: Vec<Alone>,
}

fn default_line() -> u64 {
    64
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Separate {
    pub members: Vec<String>,
    /// Why, for the person who reads the violation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Group {
    pub name: String,
    pub members: Vec<String>,
    pub max_lines: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Alone {
    pub member: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

impl Contract {
    /// Reads a contract; the error says what is wrong, without the file name (callers add it).
    pub fn from_toml(text: &str) -> Result<Contract, String> {
        let c: Contract =
            toml::from_str(text).map_err(|e| crate::profile::text::toml_error(text, &e))?;
        c.validate()?;
        Ok(c)
    }

    fn validate(&self) -> Result<(), String> {
        if self.schema != CONTRACT_SCHEMA {
            return Err(format!(
                "schema {} is not supported (this lineup reads contract schema {CONTRACT_SCHEMA})",
                self.schema
            ));
        }
        if self.type_name.is_empty() {
            return Err("`type` is empty".into());
        }
        if !self.cacheline_size.is_power_of_two() || !(8..=4096).contains(&self.cacheline_size) {
            return Err(format!(
                "cacheline_size {} is not a power of two between 8 and 4096",
                self.cacheline_size
            ));
        }
        for (i, s) in self.separate.iter().enumerate() {
            if s.members.len() < 2 {
                return Err(format!(
                    "separate #{}: names {} member(s); a rule needs two or more",
                    i + 1,
                    s.members.len()
                ));
            }
        }
        for g in &self.group {
            if g.members.is_empty() {
                return Err(format!("group '{}' names no member", g.name));
            }
            if g.max_lines == 0 {
                return Err(format!("group '{}': max_lines must be at least 1", g.name));
            }
        }
        let named = self.separate.iter().map(|s| s.members.len()).sum::<usize>()
            + self.group.iter().map(|g| g.members.len()).sum::<usize>()
            + self.alone.len();
        if named > MAX_CONTRACT_MEMBERS {
            return Err(format!(
                "names {named} members in its rules; a contract names at most {MAX_CONTRACT_MEMBERS}"
            ));
        }
        let pairs = self
            .separate
            .iter()
            .map(|s| {
                let n = s.members.len() as u64;
                n * n.saturating_sub(1) / 2
            })
            .chain(self.group.iter().map(|g| (g.members.len() as u64).pow(2)))
            .sum::<u64>();
        if pairs > MAX_CONTRACT_PAIRS {
            return Err(format!(
                "its rules relate {pairs} member pairs; a contract relates at most {MAX_CONTRACT_PAIRS} (split large rules)"
            ));
        }
        Ok(())
    }

    pub fn to_toml(&self) -> String {
        let mut s = String::from(
            "# lineup layout contract: `lineup check --btf FILE|--dwarf FILE THIS_FILE` fails when a\n\
             # build breaks a rule. Line numbers count from the start of the struct.\n",
        );
        s.push_str(&toml::to_string_pretty(self).expect("a contract always serializes"));
        s
    }
}

/// Where one member landed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Placed {
    pub name: String,
    pub offset: u64,
    pub size: u64,
    pub first_line: u64,
    pub last_line: u64,
}

impl Placed {
    /// `size` bytes at `offset`, on `line`-byte cache lines (a zero-size member sits on the
    /// line of its offset).
    pub fn new(name: String, offset: u64, size: u64, line: u64) -> Placed {
        Placed {
            name,
            offset,
            size,
            first_line: offset / line,
            last_line: (offset + size.max(1) - 1) / line,
        }
    }

    fn lines(&self) -> String {
        if self.first_line == self.last_line {
            format!("line {}", self.first_line)
        } else {
            format!("lines {}-{}", self.first_line, self.last_line)
        }
    }
    fn shares_line_with(&self, o: &Placed) -> bool {
        self.first_line <= o.last_line && o.first_line <= self.last_line
    }
}

/// One broken rule, as one line of text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// `size`, `lines`, `separate`, `group`, `alone` or `missing`.
    pub rule: &'static str,
    pub message: String,
}

/// Members of `layout` by the names a contract uses: top-level names, members of anonymous
/// inline structs/unions by their own names (as C code reaches them), and members of named
/// inline aggregates as `outer.inner`. Zero-size members (group markers) are left out.
pub fn placed_members(layout: &Layout, line: u64) -> Vec<Placed> {
    fn walk(fields: &[Field], prefix: &str, line: u64, out: &mut Vec<Placed>) {
        for f in fields {
            let name = if f.name.is_empty() {
                None
            } else {
                Some(format!("{prefix}{}", f.name))
            };
            if let Some(name) = &name
                && f.size > 0
            {
                out.push(Placed::new(name.clone(), f.offset, f.size, line));
            }
            if f.inline.is_some() {
                let inner = match &name {
                    Some(n) => format!("{n}."),
                    None => prefix.to_string(),
                };
                walk(&f.members, &inner, line, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&layout.members, "", line.max(1), &mut out);
    out
}

/// Checks `layout` against `contract`; an empty result means every rule holds.
pub fn check(contract: &Contract, layout: &Layout) -> Vec<Violation> {
    let line = contract.cacheline_size;
    let placed = placed_members(layout, line);
    // By name, the first of a name (as a scan would find it): one lookup per named member.
    let mut by_name: std::collections::HashMap<&str, &Placed> = std::collections::HashMap::new();
    for p in &placed {
        by_name.entry(p.name.as_str()).or_insert(p);
    }
    let find = |n: &str| by_name.get(n).copied();
    let ty = &contract.type_name;
    let mut out = Vec::new();
    let missing = |name: &str, rule: &str, out: &mut Vec<Violation>| {
        out.push(Violation {
            rule: "missing",
            message: format!(
                "{ty}: member '{name}' named by {rule} is not in this layout (renamed or removed?)"
            ),
        })
    };
    if let Some(max) = contract.max_size
        && layout.size > max
    {
        out.push(Violation {
            rule: "size",
            message: format!(
                "{ty}: {} bytes, more than the contract's {max} (+{})",
                layout.size,
                layout.size - max
            ),
        });
    }
    let lines = layout.size.div_ceil(line);
    if let Some(max) = contract.max_lines
        && lines > max
    {
        out.push(Violation {
            rule: "lines",
            message: format!(
                "{ty}: {lines} cache lines of {line} bytes, more than the contract's {max}"
            ),
        });
    }
    for rule in &contract.separate {
        let mut found = Vec::new();
        for m in &rule.members {
            match find(m) {
                Some(p) => found.push(p),
                None => missing(m, "a separate rule", &mut out),
            }
        }
        for i in 0..found.len() {
            for j in i + 1..found.len() {
                let (a, b) = (found[i], found[j]);
                if a.shares_line_with(b) {
                    out.push(Violation {
                        rule: "separate",
                        message: format!(
                            "{ty}: {} ({}) and {} ({}) share a cache line; the contract keeps them apart{}",
                            a.name,
                            a.lines(),
                            b.name,
                            b.lines(),
                            why(&rule.why)
                        ),
                    });
                }
            }
        }
    }
    for g in &contract.group {
        let mut found = Vec::new();
        for m in &g.members {
            match find(m) {
                Some(p) => found.push(p),
                None => missing(m, &format!("group '{}'", g.name), &mut out),
            }
        }
        if found.is_empty() {
            continue;
        }
        let first = found.iter().map(|p| p.first_line).min().unwrap_or(0);
        let last = found.iter().map(|p| p.last_line).max().unwrap_or(0);
        let span = last - first + 1;
        if span > g.max_lines {
            let spread: Vec<String> = found
                .iter()
                .map(|p| format!("{} ({})", p.name, p.lines()))
                .collect();
            out.push(Violation {
                rule: "group",
                message: format!(
                    "{ty}: group '{}' spans {span} cache lines ({first}-{last}), more than {}: {}{}",
                    g.name,
                    g.max_lines,
                    spread.join(", "),
                    why(&g.why)
                ),
            });
        }
    }
    for a in &contract.alone {
        let Some(p) = find(&a.member) else {
            missing(&a.member, "an alone rule", &mut out);
            continue;
        };
        // Members of p's own inline aggregate are part of p, not neighbours (nor is the
        // aggregate p is a member of).
        let inside = format!("{}.", p.name);
        let contains_p = |o: &str| {
            p.name
                .strip_prefix(o)
                .is_some_and(|rest| rest.starts_with('.'))
        };
        let neighbours: Vec<&str> = placed
            .iter()
            .filter(|o| {
                o.name != p.name
                    && o.shares_line_with(p)
                    && !o.name.starts_with(&inside)
                    && !contains_p(&o.name)
            })
            .map(|o| o.name.as_str())
            .collect();
        if !neighbours.is_empty() {
            out.push(Violation {
                rule: "alone",
                message: format!(
                    "{ty}: {} ({}) shares its cache line with {}; the contract gives it the line alone{}",
                    p.name,
                    p.lines(),
                    neighbours.join(", "),
                    why(&a.why)
                ),
            });
        }
    }
    out
}

fn why(w: &str) -> String {
    if w.is_empty() {
        String::new()
    } else {
        format!(" ({w})")
    }
}

/// The contract that keeps a proposed layout's point: each write-hot group stays within the
/// lines it got, every write-hot group stays off the lines of the other accessed members it
/// was moved away from, and the struct grows no further. `write_groups` are the members that
/// share a write line (by name); `accessed` are every member the evidence touches.
pub fn derive(
    layout: &Layout,
    write_groups: &[Vec<String>],
    accessed: &[String],
    line: u64,
    why: &str,
) -> Contract {
    let placed = placed_members(layout, line);
    let find = |n: &str| placed.iter().find(|p| p.name == n);
    let mut c = Contract {
        schema: CONTRACT_SCHEMA,
        type_name: layout.name.clone(),
        cacheline_size: line,
        max_size: Some(layout.size),
        ..Contract::default()
    };
    for (i, g) in write_groups.iter().enumerate() {
        let members: Vec<&Placed> = g.iter().filter_map(|n| find(n)).collect();
        let Some(rep) = members.first() else { continue };
        if members.len() > 1 {
            let first = members.iter().map(|p| p.first_line).min().unwrap_or(0);
            let last = members.iter().map(|p| p.last_line).max().unwrap_or(0);
            c.group.push(Group {
                name: format!("written_{}", i + 1),
                members: members.iter().map(|p| p.name.clone()).collect(),
                max_lines: last - first + 1,
                why: format!("written together on one path ({why})"),
            });
        }
        // Every accessed member the layout keeps off this group's lines stays off them.
        for other in accessed {
            if g.contains(other) {
                continue;
            }
            let Some(o) = find(other) else { continue };
            let apart = members.iter().all(|m| !m.shares_line_with(o));
            let already = c.separate.iter().any(|r| {
                r.members.contains(&rep.name) && r.members.contains(&o.name)
                    || r.members.contains(&o.name) && g.iter().any(|n| r.members.contains(n))
            });
            if apart && !already {
                c.separate.push(Separate {
                    members: vec![rep.name.clone(), o.name.clone()],
                    why: format!("{} is written; {why}", rep.name),
                });
            }
        }
    }
    c
}

/// Which C dialect the static asserts are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssertFlavour {
    /// `static_assert` and `sizeof_field` from the kernel's headers.
    Kernel,
    /// C11 `_Static_assert` with `<stddef.h>`.
    User,
}

/// The contract as C static asserts, to sit after the struct's declaration. `kind` is
/// `struct` or `union`. Member extents come from `offsetof` and the member's size, so the
/// asserts hold or fail with the compiler's layout, not lineup's.
pub fn static_asserts(contract: &Contract, kind: &str, flavour: AssertFlavour) -> String {
    let t = format!("{kind} {}", contract.type_name);
    let l = contract.cacheline_size;
    let (assert, size_of) = match flavour {
        AssertFlavour::Kernel => ("static_assert", "sizeof_field"),
        AssertFlavour::User => ("_Static_assert", "LINEUP_SIZEOF_FIELD"),
    };
    let first = |m: &str| format!("(offsetof({t}, {m}) / {l})");
    let last = |m: &str| format!("((offsetof({t}, {m}) + {size_of}({t}, {m}) - 1) / {l})");
    let mut s = format!(
        "/* Layout contract for {t} ({l}-byte lines), written by lineup; `lineup check` tests the same rules. */\n"
    );
    if flavour == AssertFlavour::User {
        s.push_str("#include <stddef.h>\n#ifndef LINEUP_SIZEOF_FIELD\n#define LINEUP_SIZEOF_FIELD(t, m) sizeof(((t *)0)->m)\n#endif\n");
    }
    if let Some(max) = contract.max_size {
        s.push_str(&format!(
            "{assert}(sizeof({t}) <= {max}, \"{t} grew past {max} bytes\");\n"
        ));
    }
    if let Some(max) = contract.max_lines {
        s.push_str(&format!(
            "{assert}((sizeof({t}) + {l} - 1) / {l} <= {max}, \"{t} spans more than {max} cache lines\");\n"
        ));
    }
    for rule in &contract.separate {
        for i in 0..rule.members.len() {
            for j in i + 1..rule.members.len() {
                let (a, b) = (&rule.members[i], &rule.members[j]);
                s.push_str(&format!(
                    "{assert}({} < {} || {} < {}, \"{a} and {b} share a cache line\");\n",
                    last(a),
                    first(b),
                    last(b),
                    first(a)
                ));
            }
        }
    }
    for g in &contract.group {
        // Every pair within the span bounds the whole span: max(last) - min(first) < k.
        for a in &g.members {
            for b in &g.members {
                s.push_str(&format!(
                    "{assert}({} - {} < {}, \"group {}: {a} and {b} more than {} line(s) apart\");\n",
                    last(b),
                    first(a),
                    g.max_lines,
                    g.name,
                    g.max_lines
                ));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_rejects_bad_rules_with_their_line() {
        let bad = "schema = 1\ntype = \"t\"\n[[separate]]\nmembers = [\"a\"]\n";
        let e = Contract::from_toml(bad).unwrap_err();
        assert!(e.contains("separate #1"), "{e}");
        let e = Contract::from_toml("schema = 1\ntype = \"t\"\nbogus = 3\n").unwrap_err();
        assert!(e.starts_with("line 3"), "{e}");
        let e = Contract::from_toml("schema = 9\ntype = \"t\"\n").unwrap_err();
        assert!(e.contains("schema 9"), "{e}");
        let e = Contract::from_toml("schema = 1\ntype = \"t\"\ncacheline_size = 48\n").unwrap_err();
        assert!(e.contains("power of two"), "{e}");
    }

    #[test]
    fn round_trip() {
        let c = Contract {
            schema: CONTRACT_SCHEMA,
            type_name: "s".into(),
            cacheline_size: 64,
            max_size: Some(128),
            max_lines: None,
            separate: vec![Separate {
                members: vec!["a".into(), "b".into()],
                why: "a is written on every wakeup".into(),
            }],
            group: vec![Group {
                name: "read_mostly".into(),
                members: vec!["c".into(), "d".into()],
                max_lines: 1,
                why: String::new(),
            }],
            alone: vec![],
        };
        assert_eq!(Contract::from_toml(&c.to_toml()).unwrap(), c);
    }
}
