//! The fleet's questions, asked in SQL of Apache DataFusion over the store's Parquet files
//! (registered as the table `rows`: the file columns of [`super::file_schema`] plus `build`
//! and `date` from the paths). Rust only reads the answers back.
//!
//! Cost, as the profile model ranks contended lines ([`crate::profile::rank_lines`], perf
//! c2c's order): cache-to-cache transfers (HITM and peer snoops) first, then writes (stores
//! and atomic read-modify-writes), then accesses.

use std::path::Path;

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::{DataType, Schema};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use datafusion::scalar::ScalarValue;
use serde::Serialize;

use crate::profile::{Access, CodeLocation, Counts, Latency, Profile, TypeProfile, Unit};

/// Version of `fleet top --json`, `fleet compare --json`.
pub const SCHEMA_VERSION: u32 = 1;

/// The queries, one text each for every engine that answers them: lineup's DataFusion here,
/// and Apache Spark at fleet size (`fleet/spark/lineup_fleet.py` reads the same files).
/// Placeholders `$1`, `$2` are bound as parameters (`''` for "every build"); `{limit}` is
/// replaced by a number before the text is run.
pub mod sql_text {
    pub const TOP_HOSTS: &str = include_str!("../../fleet/sql/top_hosts.sql");
    pub const TOP_TYPES: &str = include_str!("../../fleet/sql/top_types.sql");
    pub const TOP_MEMBERS: &str = include_str!("../../fleet/sql/top_members.sql");
    pub const COMPARE: &str = include_str!("../../fleet/sql/compare.sql");
    pub const PROFILE_HEAD: &str = include_str!("../../fleet/sql/profile_head.sql");
    pub const PROFILE_ROWS: &str = include_str!("../../fleet/sql/profile_rows.sql");
}

fn block_on<T>(f: impl std::future::Future<Output = Result<T, String>>) -> Result<T, String> {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| format!("cannot start the query runtime: {e}"))?
        .block_on(f)
}

/// A session with the store registered as `rows`; an error naming the store when it holds
/// no file.
async fn open(store: &Path) -> Result<SessionContext, String> {
    open_part(store, None).await
}

/// As [`open`], over only the stored files whose name (a content hash in hex) starts with one
/// of `first` (a glob character class's contents, `0246`), when given.
async fn open_part(store: &Path, first: Option<&str>) -> Result<SessionContext, String> {
    if super::stored_files(store).is_empty() {
        return Err(format!(
            "{}: no profile stored (lineup fleet add --store {} ...)",
            store.display(),
            store.display()
        ));
    }
    let dir = std::fs::canonicalize(store).map_err(|e| format!("{}: {e}", store.display()))?;
    let url = match first {
        None => format!("{}/", dir.display()),
        // The glob is matched against the file name: DataFusion leaves the
        // `key=value` folders out of it.
        Some(c) => format!("{}/[{c}]*.parquet", dir.display()),
    };
    // Text columns read as Utf8View (DataFusion's own default for Parquet): no copy of each
    // string into one buffer per batch, the larger part of a scan's time on these files.
    let schema = Schema::new(
        super::file_schema()
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Utf8 => f.as_ref().clone().with_data_type(DataType::Utf8View),
                _ => f.as_ref().clone(),
            })
            .collect::<Vec<_>>(),
    );
    let opts = ParquetReadOptions::default()
        .schema(&schema)
        .table_partition_cols(vec![
            ("build".to_string(), DataType::Utf8),
            ("date".to_string(), DataType::Utf8),
        ]);
    // The runtime is tokio's current-thread one: more partitions than one give a session no
    // parallelism, only a repartition of every row between its aggregation steps and more
    // files read at once (memory). Parallelism comes from one thread per share (`top`).
    let ctx = SessionContext::new_with_config(
        datafusion::prelude::SessionConfig::new().with_target_partitions(1),
    );
    ctx.register_parquet("rows", &url, opts)
        .await
        .map_err(|e| format!("{}: {e}", store.display()))?;
    Ok(ctx)
}

async fn sql(
    ctx: &SessionContext,
    store: &Path,
    q: &str,
    params: Vec<ScalarValue>,
) -> Result<Vec<RecordBatch>, String> {
    let fail = |e: datafusion::error::DataFusionError| format!("{}: {e}", store.display());
    let mut df = ctx.sql(q).await.map_err(fail)?;
    if !params.is_empty() {
        df = df.with_param_values(params).map_err(fail)?;
    }
    df.collect().await.map_err(fail)
}

/// One column of every batch, cast to `to`.
fn column(batches: &[RecordBatch], name: &str, to: &DataType) -> Vec<arrow::array::ArrayRef> {
    batches
        .iter()
        .map(|b| {
            let c = b.column_by_name(name).expect("the query names its columns");
            arrow::compute::cast(c, to).expect("a cast the query's types allow")
        })
        .collect()
}

fn texts(batches: &[RecordBatch], name: &str) -> Vec<Option<String>> {
    column(batches, name, &DataType::Utf8)
        .iter()
        .flat_map(|a| {
            let s = a
                .as_any()
                .downcast_ref::<arrow::array::StringArray>()
                .expect("cast to Utf8");
            (0..s.len())
                .map(|i| s.is_valid(i).then(|| s.value(i).to_string()))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn floats(batches: &[RecordBatch], name: &str) -> Vec<Option<f64>> {
    column(batches, name, &DataType::Float64)
        .iter()
        .flat_map(|a| {
            let s = a
                .as_any()
                .downcast_ref::<arrow::array::Float64Array>()
                .expect("cast to Float64");
            (0..s.len())
                .map(|i| s.is_valid(i).then(|| s.value(i)))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn uints(batches: &[RecordBatch], name: &str) -> Vec<Option<u64>> {
    column(batches, name, &DataType::UInt64)
        .iter()
        .flat_map(|a| {
            let s = a
                .as_any()
                .downcast_ref::<arrow::array::UInt64Array>()
                .expect("cast to UInt64");
            (0..s.len())
                .map(|i| s.is_valid(i).then(|| s.value(i)))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The builds stored, sorted.
pub fn builds(store: &Path) -> Result<Vec<String>, String> {
    block_on(async {
        let ctx = open(store).await?;
        let b = sql(
            &ctx,
            store,
            "SELECT DISTINCT CAST(build AS VARCHAR) AS build FROM rows ORDER BY build",
            vec![],
        )
        .await?;
        Ok(texts(&b, "build").into_iter().flatten().collect())
    })
}

/// A type or member's cost over the fleet, in one build.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Ranked {
    pub build: String,
    pub unit: String,
    #[serde(rename = "type")]
    pub type_name: String,
    /// Members only: the byte offset (absent where the evidence named the member only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Members only: the member's name, where the evidence named it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// Distinct hosts whose rows add up here.
    pub hosts: u64,
    pub transfers: f64,
    pub hitm: f64,
    pub lcl_hitm: f64,
    pub rmt_hitm: f64,
    pub writes: f64,
    pub accesses: f64,
    pub loads: f64,
    pub stores: f64,
    pub rmw: f64,
    /// Cycles of the sampled loads, where the evidence weighed them.
    pub weight: Option<f64>,
}

/// `fleet top`: types, then members, ranked by cost, per build.
#[derive(Clone, Debug, Serialize)]
pub struct Top {
    pub schema: u32,
    pub store: String,
    pub build: Option<String>,
    pub types: Vec<Ranked>,
    pub members: Vec<Ranked>,
}

fn ranked(b: &[RecordBatch], members: bool) -> Vec<Ranked> {
    let (build, unit, ty) = (texts(b, "build"), texts(b, "unit"), texts(b, "type"));
    let (offset, member) = if members {
        (uints(b, "offset"), texts(b, "member"))
    } else {
        (vec![None; ty.len()], vec![None; ty.len()])
    };
    let hosts = uints(b, "hosts");
    let f = |n: &str| floats(b, n);
    let (tr, hi, lh, rh, wr, ac) = (
        f("transfers"),
        f("hitm"),
        f("lcl_hitm"),
        f("rmt_hitm"),
        f("writes"),
        f("accesses"),
    );
    let (lo, st, rm, we) = (f("loads"), f("stores"), f("rmw"), f("weight"));
    (0..ty.len())
        .map(|i| Ranked {
            build: build[i].clone().unwrap_or_default(),
            unit: unit[i].clone().unwrap_or_default(),
            type_name: ty[i].clone().unwrap_or_default(),
            offset: offset[i],
            member: member[i].clone(),
            hosts: hosts[i].unwrap_or(0),
            transfers: tr[i].unwrap_or(0.0),
            hitm: hi[i].unwrap_or(0.0),
            lcl_hitm: lh[i].unwrap_or(0.0),
            rmt_hitm: rh[i].unwrap_or(0.0),
            writes: wr[i].unwrap_or(0.0),
            accesses: ac[i].unwrap_or(0.0),
            loads: lo[i].unwrap_or(0.0),
            stores: st[i].unwrap_or(0.0),
            rmw: rm[i].unwrap_or(0.0),
            weight: we[i],
        })
        .collect()
}

/// Types and members ranked by cost across the fleet, per build (only `build`'s when given),
/// `limit` of each.
pub fn top(store: &Path, build: Option<&str>, limit: usize) -> Result<Top, String> {
    let params = vec![ScalarValue::from(build.unwrap_or(""))];
    let types_q = sql_text::TOP_TYPES.replace("{limit}", &limit.to_string());
    let members_q = sql_text::TOP_MEMBERS.replace("{limit}", &limit.to_string());
    // One scan of the store, summed per host (top_hosts.sql); both rankings are taken from
    // that. The runtime is tokio's current-thread one, so the scan is split here: one thread
    // per CPU, each over the files whose name starts with its share of the hex digits, and
    // their sums per host are ranked together (a host in two shares is counted once: the
    // rankings count distinct hosts, and add sums).
    // A file not named by lineup (not starting with a hex digit) would be in no share: then
    // one thread reads them all.
    let files = super::stored_files(store);
    let hex_named = files.iter().all(|f| {
        f.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.chars().next())
            .is_some_and(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    });
    let threads = if hex_named {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(16))
    } else {
        1
    };
    let shares: Vec<String> = (0..threads)
        .map(|t| {
            "0123456789abcdef"
                .chars()
                .enumerate()
                .filter(|(i, _)| i % threads == t)
                .map(|(_, c)| c)
                .collect()
        })
        .collect();
    let name_starts = |share: &str| {
        files.iter().any(|f| {
            f.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.chars().next())
                .is_some_and(|c| share.contains(c))
        })
    };
    let mut parts = Vec::new();
    std::thread::scope(|scope| {
        let running: Vec<_> = shares
            .iter()
            .filter(|share| threads == 1 || name_starts(share))
            .map(|share| {
                let params = params.clone();
                let first = (threads > 1).then_some(share.as_str());
                scope.spawn(move || {
                    block_on(async {
                        let ctx = open_part(store, first).await?;
                        let fail = |e: datafusion::error::DataFusionError| {
                            format!("{}: {e}", store.display())
                        };
                        let df = ctx
                            .sql(sql_text::TOP_HOSTS)
                            .await
                            .map_err(fail)?
                            .with_param_values(params)
                            .map_err(fail)?;
                        let schema = std::sync::Arc::new(df.schema().as_arrow().clone());
                        Ok((schema, df.collect().await.map_err(fail)?))
                    })
                })
            })
            .collect();
        for r in running {
            parts.push(
                r.join()
                    .unwrap_or_else(|_| Err("a query thread panicked".into())),
            );
        }
    });
    let parts = parts.into_iter().collect::<Result<Vec<_>, String>>()?;
    block_on(async {
        let ctx = open(store).await?;
        let fail = |e: datafusion::error::DataFusionError| format!("{}: {e}", store.display());
        let Some(schema) = parts.first().map(|(s, _)| s.clone()) else {
            return Err(format!("{}: no profile stored", store.display()));
        };
        let host_rows = parts.into_iter().map(|(_, b)| b).collect();
        let table = datafusion::datasource::MemTable::try_new(schema, host_rows).map_err(fail)?;
        ctx.register_table("host_rows", std::sync::Arc::new(table))
            .map_err(fail)?;
        let types = ranked(&sql(&ctx, store, &types_q, vec![]).await?, false);
        let members = ranked(&sql(&ctx, store, &members_q, vec![]).await?, true);
        Ok(Top {
            schema: SCHEMA_VERSION,
            store: store.display().to_string(),
            build: build.map(str::to_string),
            types,
            members,
        })
    })
}

/// One side of a member in `fleet compare`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Side {
    /// The member's lowest and highest offset seen (one value but for arrays and members
    /// touched at several places).
    pub offset: Option<u64>,
    pub offset_max: Option<u64>,
    pub hosts: u64,
    pub transfers: f64,
    pub writes: f64,
    pub accesses: f64,
}

/// One member of one type in two builds.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct MemberChange {
    #[serde(rename = "type")]
    pub type_name: String,
    /// The member's name, or `+OFFSET` where the evidence named none.
    pub member: String,
    pub a: Option<Side>,
    pub b: Option<Side>,
    /// Its offset differs between the builds (a re-layout moved it).
    pub moved: bool,
    /// `better`, `worse` or `same` by cost per host (transfers per host, or writes per host
    /// where neither build has transfers); `new` or `gone` when only one build has it
    /// (fleet/sql/compare.sql decides).
    pub change: String,
}

/// `fleet compare`: every member of either build.
#[derive(Clone, Debug, Serialize)]
pub struct Compare {
    pub schema: u32,
    pub store: String,
    pub build_a: String,
    pub build_b: String,
    pub members: Vec<MemberChange>,
}

impl Compare {
    /// Whether any member moved or changed cost: `diff`'s exit 1.
    pub fn differs(&self) -> bool {
        self.members.iter().any(|m| m.moved || m.change != "same")
    }
}

/// Member by member, build `a` against build `b`; an error naming the build that is not
/// stored.
pub fn compare(store: &Path, a: &str, b: &str) -> Result<Compare, String> {
    let have = builds(store)?;
    for x in [a, b] {
        if !have.iter().any(|h| h == x) {
            return Err(format!(
                "{}: no build {x:?} stored (stored: {})",
                store.display(),
                have.join(", ")
            ));
        }
    }
    block_on(async {
        let ctx = open(store).await?;
        let r = sql(&ctx, store, sql_text::COMPARE, vec![a.into(), b.into()]).await?;
        let (ty, member) = (texts(&r, "type"), texts(&r, "member"));
        let side = |p: &str| -> Vec<Option<Side>> {
            let present = texts(&r, &format!("{p}_build"));
            let (off, off_max, hosts) = (
                uints(&r, &format!("{p}_offset")),
                uints(&r, &format!("{p}_offset_max")),
                uints(&r, &format!("{p}_hosts")),
            );
            let f = |n: &str| floats(&r, &format!("{p}_{n}"));
            let (t, w, acc) = (f("transfers"), f("writes"), f("accesses"));
            (0..present.len())
                .map(|i| {
                    present[i].as_ref().map(|_| Side {
                        offset: off[i],
                        offset_max: off_max[i],
                        hosts: hosts[i].unwrap_or(0),
                        transfers: t[i].unwrap_or(0.0),
                        writes: w[i].unwrap_or(0.0),
                        accesses: acc[i].unwrap_or(0.0),
                    })
                })
                .collect()
        };
        let (sa, sb) = (side("a"), side("b"));
        let change = texts(&r, "change");
        let moved = column(&r, "moved", &DataType::Boolean);
        let moved: Vec<bool> = moved
            .iter()
            .flat_map(|a| {
                let b = a
                    .as_any()
                    .downcast_ref::<arrow::array::BooleanArray>()
                    .expect("cast to Boolean");
                (0..b.len())
                    .map(|i| b.is_valid(i) && b.value(i))
                    .collect::<Vec<_>>()
            })
            .collect();
        let members = (0..ty.len())
            .map(|i| MemberChange {
                type_name: ty[i].clone().unwrap_or_default(),
                member: member[i].clone().unwrap_or_default(),
                change: change[i].clone().unwrap_or_default(),
                a: sa[i].clone(),
                b: sb[i].clone(),
                moved: moved[i],
            })
            .collect();
        Ok(Compare {
            schema: SCHEMA_VERSION,
            store: store.display().to_string(),
            build_a: a.to_string(),
            build_b: b.to_string(),
            members,
        })
    })
}

/// One merged profile of `type_name` over every host (of `build` when given): rows alike in
/// offset, size, member and function add up into one access. CPU counts of different hosts
/// are not one set of CPUs: the merged access keeps the largest count, and the CPU list only
/// where every row gives the same one. An error when the rows mix units or line sizes.
pub fn profile(store: &Path, type_name: &str, build: Option<&str>) -> Result<Profile, String> {
    let params = vec![
        ScalarValue::from(type_name),
        ScalarValue::from(build.unwrap_or("")),
    ];
    let (head_q, rows_q) = (sql_text::PROFILE_HEAD, sql_text::PROFILE_ROWS);
    block_on(async {
        let ctx = open(store).await?;
        let head = sql(&ctx, store, head_q, params.clone()).await?;
        let n = uints(&head, "n").first().copied().flatten().unwrap_or(0);
        if n == 0 {
            return Err(format!(
                "{}: no row of type {type_name}{} stored",
                store.display(),
                build.map(|b| format!(" in build {b}")).unwrap_or_default()
            ));
        }
        let one = |k: &str| uints(&head, k)[0].unwrap_or(0);
        if one("units") > 1 || one("sizes") > 1 {
            return Err(format!(
                "{}: the rows of type {type_name} mix units or cache line sizes; give --build",
                store.display()
            ));
        }
        let unit_text = texts(&head, "unit")[0].clone().unwrap_or_default();
        let unit: Unit = serde_json::from_value(serde_json::Value::String(unit_text.clone()))
            .map_err(|_| format!("{}: unknown unit {unit_text:?}", store.display()))?;
        let mut p = Profile::new("lineup fleet", unit, one("cacheline_size"));
        p.provenance.input = Some(store.display().to_string());
        if one("cpu_counts") == 1 {
            p.provenance.machine.cpus = uints(&head, "host_cpus")[0].map(|c| c as u32);
        }
        let s = &mut p.provenance.settings;
        s.insert("fleet_type".into(), type_name.to_string());
        s.insert("fleet_hosts".into(), one("hosts").to_string());
        s.insert("fleet_builds".into(), one("builds").to_string());
        if let Some(b) = build {
            s.insert("fleet_build".into(), b.to_string());
        }
        let r = sql(&ctx, store, rows_q, params).await?;
        let (offset, size) = (uints(&r, "offset"), uints(&r, "size"));
        let (member, function, cpu_list) = (
            texts(&r, "member"),
            texts(&r, "function"),
            texts(&r, "cpu_list"),
        );
        let (cpu_count, weight) = (uints(&r, "cpu_count"), floats(&r, "weight"));
        let f = |n: &str| floats(&r, n);
        let c = [
            "loads", "stores", "rmw", "lcl_hitm", "rmt_hitm", "lcl_peer", "rmt_peer",
        ]
        .map(f);
        let accesses = (0..offset.len())
            .map(|i| {
                let v = |k: usize| c[k][i].unwrap_or(0.0);
                let cpus = match cpu_list[i].as_deref().and_then(super::parse_cpu_list) {
                    Some(list) => Some(list),
                    None => cpu_count[i].map(|n| crate::profile::CpuUse::count(n as u32)),
                };
                Access {
                    offset: offset[i],
                    size: size[i],
                    field: member[i].clone(),
                    counts: Counts {
                        loads: v(0),
                        stores: v(1),
                        rmw: v(2),
                        lcl_hitm: v(3),
                        rmt_hitm: v(4),
                        lcl_peer: v(5),
                        rmt_peer: v(6),
                    },
                    latency: weight[i].map(|w| Latency {
                        total_cycles: Some(w),
                        ..Default::default()
                    }),
                    cpus,
                    code: function[i].as_ref().map(|f| CodeLocation {
                        symbol: Some(f.as_str().into()),
                        ..Default::default()
                    }),
                    ..Default::default()
                }
            })
            .collect();
        p.types.push(TypeProfile {
            type_name: type_name.to_string(),
            accesses,
            ..Default::default()
        });
        Ok(p)
    })
}
