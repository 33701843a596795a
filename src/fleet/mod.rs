//! The fleet store (`--features fleet`, docs/fleet.md): typed access aggregates of many hosts,
//! builds and workloads, kept as Parquet files under `DIR/build=<id>/date=<YYYY-MM-DD>/`, and
//! queried with SQL on Apache DataFusion ([`query`]).
//!
//! A profile enters the store as its typed accesses ([`Profile::type_accesses`]: those the
//! evidence typed itself, and raw lines once bound to a struct), one row each ([`rows`]). Raw
//! addresses (instruction pointers) are dropped unless asked for: kernel addresses reveal the
//! KASLR base. The row schema ([`file_schema`]) is versioned by [`SCHEMA_VERSION`] and
//! documented in `docs/schema/fleet-row.md`.

pub mod query;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    ArrayRef, Float64Builder, RecordBatch, StringBuilder, UInt32Builder, UInt64Builder,
};
use arrow::datatypes::{DataType, Field, Schema};

use crate::profile::{Access, Counts, CpuUse, Profile};

/// Version of the row schema; bumped on any change an older reader would misread. Written in
/// each file's key-value metadata as [`SCHEMA_KEY`].
pub const SCHEMA_VERSION: u32 = 1;
/// The Parquet key-value metadata key holding [`SCHEMA_VERSION`].
pub const SCHEMA_KEY: &str = "lineup.fleet.schema";

/// What tags one profile in the store: the partition (build, date) and who measured it.
#[derive(Clone, Debug, Default)]
pub struct Tags {
    pub build: String,
    pub date: String,
    pub host: String,
    pub machine: Option<String>,
    pub workload: String,
}

/// One typed access aggregate: one row of the store, less its tags.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    pub type_name: String,
    pub offset: Option<u64>,
    pub member: Option<String>,
    pub size: Option<u64>,
    pub function: Option<String>,
    /// The instruction address in hex, only with `--keep-addresses`.
    pub ip: Option<String>,
    pub cpu_count: Option<u32>,
    pub cpu_list: Option<String>,
    pub counts: Counts,
    /// Cycles summed over the sampled loads (the access's latency `total_cycles`), where known.
    pub weight: Option<f64>,
}

/// The columns of a stored file; `build` and `date` are not in it but in its path
/// (`build=<id>/date=<date>/`, Hive-style partitions), as [`query`] reads them.
pub fn file_schema() -> Schema {
    let s = |n: &str, null: bool| Field::new(n, DataType::Utf8, null);
    let u64f = |n: &str| Field::new(n, DataType::UInt64, true);
    let f64f = |n: &str| Field::new(n, DataType::Float64, false);
    Schema::new(vec![
        s("host", false),
        s("machine", true),
        s("workload", false),
        s("tool", false),
        s("unit", false),
        Field::new("cacheline_size", DataType::UInt64, false),
        Field::new("host_cpus", DataType::UInt32, true),
        s("type", false),
        u64f("offset"),
        s("member", true),
        u64f("size"),
        s("function", true),
        s("ip", true),
        Field::new("cpu_count", DataType::UInt32, true),
        s("cpu_list", true),
        f64f("loads"),
        f64f("stores"),
        f64f("rmw"),
        f64f("lcl_hitm"),
        f64f("rmt_hitm"),
        f64f("lcl_peer"),
        f64f("rmt_peer"),
        f64f("transfers"),
        Field::new("weight", DataType::Float64, true),
    ])
}

/// CPUs as text: `0-3,8`, or `all`.
pub fn cpu_list_text(c: &CpuUse) -> Option<String> {
    if c.all {
        return Some("all".into());
    }
    if c.list.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < c.list.len() {
        let start = c.list[i];
        let mut end = start;
        while i + 1 < c.list.len() && c.list[i + 1] == end + 1 {
            end += 1;
            i += 1;
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    Some(parts.join(","))
}

/// The CPUs of [`cpu_list_text`] back; None for text it does not write.
pub fn parse_cpu_list(text: &str) -> Option<CpuUse> {
    if text == "all" {
        return Some(CpuUse {
            all: true,
            ..Default::default()
        });
    }
    let mut list = Vec::new();
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => list.extend(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?),
            None => list.push(part.parse().ok()?),
        }
    }
    Some(CpuUse {
        count: Some(u32::try_from(list.len()).ok()?),
        all: false,
        list,
    })
}

fn row(type_name: &str, a: &Access, keep_addresses: bool) -> Row {
    let cpu_list = a.cpus.as_ref().and_then(cpu_list_text);
    let cpu_count = a.cpus.as_ref().and_then(|c| {
        c.count
            .or_else(|| (!c.list.is_empty()).then(|| c.list.len() as u32))
    });
    Row {
        type_name: type_name.to_string(),
        offset: a.offset,
        member: a.field.clone(),
        size: a.size,
        function: a
            .code
            .as_ref()
            .and_then(|c| c.symbol.as_deref().map(str::to_string)),
        ip: a
            .code
            .as_ref()
            .and_then(|c| c.address)
            .filter(|_| keep_addresses)
            .map(|ip| format!("{ip:#x}")),
        cpu_count,
        cpu_list,
        counts: a.counts,
        weight: a.latency.and_then(|l| l.total_cycles),
    }
}

/// The typed access aggregates of `profile`, one row per access of each type it holds
/// (its own typed accesses and its raw lines bound to the type), in the profile's order;
/// only `only`'s when given. Accesses with nothing counted are left out.
pub fn rows(profile: &Profile, only: Option<&str>, keep_addresses: bool) -> Vec<Row> {
    let mut names: Vec<&str> = profile.types.iter().map(|t| t.type_name.as_str()).collect();
    for l in &profile.lines {
        if let Some(b) = &l.binding
            && !names.contains(&b.type_name.as_str())
        {
            names.push(&b.type_name);
        }
    }
    names
        .into_iter()
        .filter(|n| only.is_none_or(|o| o == *n))
        .flat_map(|n| {
            profile
                .type_accesses(n)
                .into_iter()
                .filter(|a| !a.counts.is_empty())
                .map(move |a| row(n, &a, keep_addresses))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The rows as one Arrow batch of [`file_schema`], tagged.
pub fn batch(profile: &Profile, tags: &Tags, rows: &[Row]) -> Result<RecordBatch, String> {
    let n = rows.len();
    let text = |f: &dyn Fn(&Row) -> Option<String>| -> ArrayRef {
        let mut b = StringBuilder::with_capacity(n, n * 8);
        rows.iter().for_each(|r| b.append_option(f(r)));
        Arc::new(b.finish())
    };
    let same = |v: &str| text(&|_| Some(v.to_string()));
    let u64col = |f: &dyn Fn(&Row) -> Option<u64>| -> ArrayRef {
        let mut b = UInt64Builder::with_capacity(n);
        rows.iter().for_each(|r| b.append_option(f(r)));
        Arc::new(b.finish())
    };
    let u32col = |f: &dyn Fn(&Row) -> Option<u32>| -> ArrayRef {
        let mut b = UInt32Builder::with_capacity(n);
        rows.iter().for_each(|r| b.append_option(f(r)));
        Arc::new(b.finish())
    };
    let f64col = |f: &dyn Fn(&Row) -> Option<f64>| -> ArrayRef {
        let mut b = Float64Builder::with_capacity(n);
        rows.iter().for_each(|r| b.append_option(f(r)));
        Arc::new(b.finish())
    };
    let unit = serde_json::to_value(profile.unit)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let columns: Vec<ArrayRef> = vec![
        same(&tags.host),
        text(&|_| tags.machine.clone()),
        same(&tags.workload),
        same(&profile.provenance.tool),
        same(&unit),
        u64col(&|_| Some(profile.cacheline_size)),
        u32col(&|_| profile.provenance.machine.cpus),
        text(&|r| Some(r.type_name.clone())),
        u64col(&|r| r.offset),
        text(&|r| r.member.clone()),
        u64col(&|r| r.size),
        text(&|r| r.function.clone()),
        text(&|r| r.ip.clone()),
        u32col(&|r| r.cpu_count),
        text(&|r| r.cpu_list.clone()),
        f64col(&|r| Some(r.counts.loads)),
        f64col(&|r| Some(r.counts.stores)),
        f64col(&|r| Some(r.counts.rmw)),
        f64col(&|r| Some(r.counts.lcl_hitm)),
        f64col(&|r| Some(r.counts.rmt_hitm)),
        f64col(&|r| Some(r.counts.lcl_peer)),
        f64col(&|r| Some(r.counts.rmt_peer)),
        f64col(&|r| Some(r.counts.transfers())),
        f64col(&|r| r.weight),
    ];
    RecordBatch::try_new(Arc::new(file_schema()), columns).map_err(|e| e.to_string())
}

/// A content hash (FNV-1a, 128 bits) of the evidence's bytes and the tags, in hex: the name
/// of the file the evidence is stored in, so that the same input is refused a second time.
/// Not cryptographic: it names content, it does not guard against forgery.
#[derive(Clone)]
pub struct ContentHash(u128);

impl Default for ContentHash {
    fn default() -> Self {
        ContentHash(0x6c62272e07bb014262b821756295c58d)
    }
}

impl ContentHash {
    pub fn update(&mut self, bytes: &[u8]) {
        const PRIME: u128 = 0x0000000001000000000000000000013B;
        for &b in bytes {
            self.0 ^= u128::from(b);
            self.0 = self.0.wrapping_mul(PRIME);
        }
    }
    /// A field: its length first, so that ("ab", "c") and ("a", "bc") differ.
    pub fn field(&mut self, bytes: &[u8]) {
        self.update(&(bytes.len() as u64).to_le_bytes());
        self.update(bytes);
    }
    pub fn tags(&mut self, t: &Tags, keep_addresses: bool) {
        for f in [&t.build, &t.date, &t.host, &t.workload] {
            self.field(f.as_bytes());
        }
        self.field(t.machine.as_deref().unwrap_or("").as_bytes());
        self.field(&[u8::from(keep_addresses)]);
    }
    pub fn hex(&self) -> String {
        format!("{:032x}", self.0)
    }
}

/// A build id or partition value lineup writes into a path: letters, digits, `.`, `_`, `-`.
pub fn check_build(build: &str) -> Result<(), String> {
    let ok = !build.is_empty()
        && build.len() <= 128
        && !build.starts_with('.')
        && build
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "build id {build:?} is not 1 to 128 letters, digits, '.', '_' or '-' (not starting with '.')"
        ))
    }
}

/// A date as `YYYY-MM-DD`.
pub fn check_date(date: &str) -> Result<(), String> {
    let b = date.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let ok = b.len() == 10 && b[4] == b'-' && b[7] == b'-' && digits(0..4) && digits(5..7) && {
        let m: u32 = date[5..7].parse().unwrap_or(0);
        let d: u32 = date[8..10].parse().unwrap_or(0);
        digits(8..10) && (1..=12).contains(&m) && (1..=31).contains(&d)
    };
    if ok {
        Ok(())
    } else {
        Err(format!("date {date:?} is not YYYY-MM-DD"))
    }
}

/// Every stored file of the store, sorted (none for a store not yet made).
pub fn stored_files(store: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "parquet") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(store, &mut out);
    out.sort();
    out
}

/// Writes one profile's rows to `store/build=<b>/date=<d>/<hash>.parquet`, atomically (a
/// hidden temporary file in the same folder, synced, then renamed), and returns its path.
/// Refuses a hash already stored anywhere in the store, and an empty batch, writing nothing.
pub fn write(
    store: &Path,
    tags: &Tags,
    hash: &str,
    batch: &RecordBatch,
) -> Result<PathBuf, String> {
    check_build(&tags.build)?;
    check_date(&tags.date)?;
    if batch.num_rows() == 0 {
        return Err("no access typed to a struct to store".into());
    }
    let name = format!("{hash}.parquet");
    if let Some(old) = stored_files(store)
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == name.as_str()))
    {
        return Err(format!("already in the store, as {}", old.display()));
    }
    let dir = store
        .join(format!("build={}", tags.build))
        .join(format!("date={}", tags.date));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".{hash}.{}.tmp", std::process::id()));
    let done = dir.join(&name);
    let written = (|| -> Result<(), String> {
        let file = std::fs::File::create(&tmp).map_err(|e| e.to_string())?;
        let props = parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::SNAPPY)
            .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
                SCHEMA_KEY.to_string(),
                SCHEMA_VERSION.to_string(),
            )]))
            .build();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props))
            .map_err(|e| e.to_string())?;
        w.write(batch).map_err(|e| e.to_string())?;
        let mut file = w.into_inner().map_err(|e| e.to_string())?;
        file.flush().map_err(|e| e.to_string())?;
        file.sync_all().map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, &done).map_err(|e| e.to_string())?;
        // The rename itself is durable once the folder is synced.
        std::fs::File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| e.to_string())
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("{}: cannot write: {e}", done.display()));
    }
    Ok(done)
}

/// The build id the evidence names, where it names one: perf.data's build-id of the kernel
/// (`[kernel.kallsyms]`), else its only build-id.
pub fn evidence_build_id(profile: &Profile) -> Option<String> {
    let ids: Vec<(&str, &String)> = profile
        .provenance
        .settings
        .iter()
        .filter_map(|(k, v)| k.strip_prefix("build_id ").map(|p| (p, v)))
        .collect();
    ids.iter()
        .find(|(p, _)| p.starts_with("[kernel.kallsyms]"))
        .or(if ids.len() == 1 { ids.first() } else { None })
        .map(|(_, v)| (*v).clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{CodeLocation, TypeProfile};

    #[test]
    fn cpu_lists_round_trip() {
        let c = CpuUse {
            count: Some(6),
            all: false,
            list: vec![0, 1, 2, 3, 8, 10],
        };
        let t = cpu_list_text(&c).unwrap();
        assert_eq!(t, "0-3,8,10");
        assert_eq!(parse_cpu_list(&t).unwrap(), c);
        assert!(parse_cpu_list("x-1").is_none());
    }

    #[test]
    fn dates_and_builds_are_checked() {
        assert!(check_date("2025-02-28").is_ok());
        assert!(check_date("2025-13-01").is_err());
        assert!(check_date("2025-1-01").is_err());
        assert!(check_date(&crate::clock::today()).is_ok());
        assert!(check_build("6.18.44-abc_1").is_ok());
        assert!(check_build("../x").is_err());
        assert!(check_build("a/b").is_err());
        assert!(check_build("").is_err());
    }

    #[test]
    fn the_hash_sees_every_tag() {
        let t = Tags {
            build: "b".into(),
            date: "2025-01-01".into(),
            host: "h".into(),
            machine: None,
            workload: "w".into(),
        };
        let h = |t: &Tags, keep| {
            let mut c = ContentHash::default();
            c.field(b"evidence");
            c.tags(t, keep);
            c.hex()
        };
        let base = h(&t, false);
        assert_eq!(base.len(), 32);
        assert_eq!(base, h(&t.clone(), false));
        assert_ne!(base, h(&t, true));
        let other = Tags {
            host: "h2".into(),
            ..t.clone()
        };
        assert_ne!(base, h(&other, false));
    }

    #[test]
    fn addresses_are_kept_only_when_asked() {
        let access = Access {
            offset: Some(8),
            field: Some("count".into()),
            counts: Counts {
                stores: 3.0,
                lcl_hitm: 2.0,
                ..Default::default()
            },
            code: Some(CodeLocation {
                symbol: Some("inc".into()),
                address: Some(0xffffffff81000010),
                ..Default::default()
            }),
            ..Default::default()
        };
        let empty = Access {
            offset: Some(0),
            ..Default::default()
        };
        let p = Profile {
            types: vec![TypeProfile {
                type_name: "s".into(),
                accesses: vec![access, empty],
                ..Default::default()
            }],
            ..Profile::new("test", crate::profile::Unit::Samples, 64)
        };
        let kept = rows(&p, None, true);
        let dropped = rows(&p, None, false);
        // The access with nothing counted is no row.
        assert_eq!((kept.len(), dropped.len()), (1, 1));
        assert_eq!(kept[0].ip.as_deref(), Some("0xffffffff81000010"));
        assert_eq!(dropped[0].ip, None);
        assert_eq!(dropped[0].function.as_deref(), Some("inc"));
        assert_eq!(dropped[0].offset, Some(8));
        assert!(rows(&p, Some("other"), false).is_empty());
        let b = batch(&p, &Tags::default(), &dropped).unwrap();
        assert_eq!(b.num_rows(), 1);
        assert_eq!(b.schema().fields().len(), file_schema().fields().len());
    }
}
