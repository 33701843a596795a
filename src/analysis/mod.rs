//! Analysis over layouts and access profiles: which field an offset is, which struct a
//! contended line belongs to (and later: verdicts, cost model, optimizer).

pub mod attribute;
pub mod diagnose;
pub mod fields;
