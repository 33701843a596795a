//! The subject of `diagnose`, `optimize`, `predict` and `replay`: the struct the evidence is
//! about, found in the types, and the evidence bound to it as accesses with struct-relative
//! offsets. Refusals are one line naming the evidence file.

use crate::analysis::bind::{self, BindInput, Unbound};
use crate::analysis::diagnose::{self, LineBinding};
use crate::profile::{Access, Profile};
use crate::types::{TypeId, Types};

/// The struct named `name` in the types read from `label`, or a one-line error with close
/// names.
pub fn find_type(types: &Types<'_>, label: &str, name: &str) -> Result<TypeId, String> {
    let found = types.find_composites(name);
    let Some(&id) = found.first() else {
        let close = crate::record::similar_program_names(types, name, 5);
        let hint = if close.is_empty() {
            String::new()
        } else {
            format!("; did you mean: {}?", close.join(", "))
        };
        return Err(format!("{label}: no struct or union named '{name}'{hint}"));
    };
    Ok(id)
}

/// The evidence file as given on the command line (not the one a saved profile was once
/// imported from).
pub fn evidence_label(p: &Profile) -> String {
    let name = p
        .provenance
        .loaded_from
        .clone()
        .or_else(|| p.provenance.input.clone())
        .unwrap_or_else(|| p.provenance.tool.clone());
    match p.report_place() {
        Some(place) => format!("{name} ({place})"),
        None => name,
    }
}

/// The profile type whose heap blocks `selector` (`file.c:LINE`, `file.c`, a function)
/// names; a one-line error listing the sites there are when none.
pub fn type_allocated_at(profile: &Profile, selector: &str) -> Result<String, String> {
    let mut found: Vec<&str> = Vec::new();
    for t in &profile.types {
        if t.allocations.iter().any(|a| a.matches(selector))
            && !found.contains(&t.type_name.as_str())
        {
            found.push(&t.type_name);
        }
    }
    match found.as_slice() {
        [one] => Ok(one.to_string()),
        [] => {
            let mut sites: Vec<String> = Vec::new();
            for t in &profile.types {
                for a in &t.allocations {
                    let s = format!(
                        "{} ({})",
                        a.source.as_deref().unwrap_or("?"),
                        a.function.as_deref().unwrap_or("?")
                    );
                    if !sites.contains(&s) {
                        sites.push(s);
                    }
                }
            }
            Err(format!(
                "{}: no heap block with recorded accesses was allocated at '{selector}'; {}",
                evidence_label(profile),
                if sites.is_empty() {
                    "the profile has no allocation sites (is it a `lineup record` profile?)"
                        .to_string()
                } else {
                    format!("sites: {}", sites.join(", "))
                }
            ))
        }
        many => Err(format!(
            "{}: '{selector}' allocated blocks of several types: {}; name one site (file.c:LINE) or use --type",
            evidence_label(profile),
            many.join(", ")
        )),
    }
}

/// The evidence bound to one struct.
pub struct Evidence {
    pub bindings: Vec<LineBinding>,
    /// Raw lines that fit nothing of the struct, and why.
    pub unbound: Vec<Unbound>,
    pub accesses: Vec<Access>,
    /// Fields the profile names that the struct lacks.
    pub missing: Vec<String>,
    /// The binding in words (`lineup::emit::binding::binding_text`), for the command to
    /// print once it succeeds; empty until the command renders it.
    pub binding: String,
}

/// Binds raw lines of `profile` to struct `id` and returns its accesses; an error when the
/// profile holds none for it. The types' side of the binding follows `diagnose`'s rule
/// ([`bind::types_domain`]).
pub fn gather(
    profile: &mut Profile,
    (types, source): (&Types<'_>, &str),
    id: TypeId,
    type_name: &str,
    size: u64,
    (line_offset, earlier): (Option<i64>, Vec<Profile>),
) -> Result<Evidence, String> {
    let input = BindInput {
        domain: bind::types_domain(types, source, profile),
        line_start: line_offset,
        earlier,
        ..Default::default()
    };
    gather_with(profile, types, id, type_name, size, &input)
}

/// [`gather`] with everything binding takes: the types' side, decoded instructions.
pub fn gather_with(
    profile: &mut Profile,
    types: &Types<'_>,
    id: TypeId,
    type_name: &str,
    size: u64,
    input: &BindInput,
) -> Result<Evidence, String> {
    let outcome = bind::bind_type(profile, types, id, type_name, input);
    let (accesses, missing) = diagnose::accesses_for(profile, types, id, type_name);
    if accesses.iter().all(|a| a.offset.is_none()) {
        return Err(no_accesses(
            profile,
            type_name,
            size,
            &missing,
            &outcome.unbound,
        ));
    }
    Ok(Evidence {
        bindings: outcome.bound,
        unbound: outcome.unbound,
        accesses,
        missing,
        binding: String::new(),
    })
}

/// Why the profile holds no access to struct `type_name` at a known offset: fields it
/// lacks, lines that fit nowhere, a memory budget that counted everything per code site,
/// or no evidence about it at all.
fn no_accesses(
    profile: &Profile,
    type_name: &str,
    size: u64,
    missing: &[String],
    unbound: &[Unbound],
) -> String {
    if !missing.is_empty() {
        return format!(
            "{}: the profile names fields struct {type_name} does not have: {}",
            evidence_label(profile),
            missing.join(", ")
        );
    }
    if !unbound.is_empty() {
        let why: Vec<String> = unbound
            .iter()
            .take(3)
            .map(|u| format!("line {:#x}: {}", u.address, u.reason))
            .collect();
        return format!(
            "{}: no line of the report fits struct {type_name} ({size} bytes): {}{}",
            evidence_label(profile),
            why.join("; "),
            if unbound.len() > 3 {
                format!("; and {} more", unbound.len() - 3)
            } else {
                String::new()
            }
        );
    }
    let about: Vec<&str> = profile.types.iter().map(|t| t.type_name.as_str()).collect();
    let hint = if about.is_empty() {
        String::new()
    } else {
        format!("; it describes {}", about.join(", "))
    };
    // A recording whose memory budget counted every access to the type per code site.
    if let Some(t) = profile.type_profile(type_name)
        && !t.degraded.is_empty()
    {
        let n: f64 = t.degraded.iter().map(|d| d.loads + d.stores + d.rmw).sum();
        return format!(
            "{}: every access to struct {type_name} ({n:.0}, over {} range(s): {}) was counted per code site by the memory budget (degraded: the profile's `degraded`), none per place; record again with a larger --memory for its members and lines",
            evidence_label(profile),
            t.degraded.len(),
            t.degraded
                .iter()
                .take(2)
                .map(|d| format!(
                    "bytes {}..{} of {}, {} line(s)",
                    d.start,
                    d.end.saturating_sub(1),
                    d.object,
                    d.lines
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    format!(
        "{}: the profile holds no access to struct {type_name} ({size} bytes){hint}",
        evidence_label(profile),
    )
}
