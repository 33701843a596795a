//! The access profile: who loads and stores which bytes of which struct, from where.
//! (Being written: model, c2c/perf-script/sketch importers.)
