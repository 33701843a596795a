//! Analysis over layouts and access profiles: which field an offset is, which struct a
//! contended line belongs to, verdicts per line, the machine and cost models, the optimizer.

pub mod attribute;
pub mod bind;
pub mod candidate;
pub mod contention;
pub mod contract;
pub mod cost;
pub mod diagnose;
pub mod fields;
pub mod instances;
pub mod layout_diff;
pub mod machine;
pub mod model;
pub mod optimize;
pub mod plan;
pub mod prediction;
pub mod run;
pub mod slices;
pub mod slots;
pub mod struct_diagnosis;
pub mod subject;
