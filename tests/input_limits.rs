//! Untrusted input never exhausts memory or time (issue 23, items 6 and 7): each pathological
//! input is made here, in a temporary directory, and lineup must either refuse it with one
//! line naming the file and what is wrong (exit status 2, nothing on stdout, no panic) or
//! finish. Every run is bounded: lineup runs with a 4 GiB address-space limit and is killed
//! after [`GUARD`] (30 s) of CPU time or [`WALL_GUARD`] of wall time, so a hang or a runaway
//! allocation fails the test instead of stalling it.
//! The limits themselves are listed in docs/inputs.md.
//!
//! No test opens a device file: an endless input is a FIFO fed by a thread, or a sparse file.

mod common;

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How much CPU time one lineup run may take before the test kills it and fails: far above
/// what any of these inputs needs once bounded (seconds at most; the largest sketch allowed
/// takes about 20 s to optimize), far below a hang. CPU time, not wall time: on a loaded
/// machine the same run took 27-30 s of wall time for 18-20 s of CPU.
const GUARD: Duration = Duration::from_secs(30);

/// How long one run may wait without using the CPU (an input that blocks it): a hang that
/// sleeps shows no CPU time.
const WALL_GUARD: Duration = Duration::from_secs(180);

/// CPU time (user and system) process `pid` has used so far, from /proc/PID/stat.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command's closing parenthesis: state is the 3rd field of the line,
    // utime and stime its 14th and 15th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis(f.iter().sum::<u64>() * 1000 / ticks)
}

/// Address space one lineup run may use: the unbounded inputs took 5.6 and 7.9 GB.
const MEMORY: u64 = 4 << 30;

const BTF: &str = "data/vmlinux-6.18.44.btf";
const PASTE: &str = "tests/data/c2c/seed000_paste.txt";

/// What one bounded lineup run gave.
struct Run {
    args: Vec<String>,
    /// The exit status; None when a signal ended it.
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
}

/// Runs lineup in the repository root with `args`, `stdin` written to its standard input
/// (else none), within [`MEMORY`] and [`GUARD`].
fn run_with(args: &[&str], stdin: Option<Vec<u8>>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lineup"));
    cmd.args(args)
        .current_dir(common::repo())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: MEMORY,
                rlim_max: MEMORY,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("run lineup");
    let feeder = child.stdin.take().map(|mut w| {
        let bytes = stdin.unwrap_or_default();
        // lineup may stop reading early (a refused input): a broken pipe is fine.
        std::thread::spawn(move || {
            let _ = w.write_all(&bytes);
        })
    });
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        let cpu = cpu_time(child.id());
        if cpu > GUARD || started.elapsed() > WALL_GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "lineup {args:?} ran {cpu:?} of CPU, {:?} in all: killed (a hang)",
                started.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(f) = feeder {
        let _ = f.join();
    }
    Run {
        args: args.iter().map(|s| s.to_string()).collect(),
        code: status.code(),
        stdout: out.join().unwrap(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
    }
}

fn run(args: &[&str]) -> Run {
    run_with(args, None)
}

impl Run {
    /// Refused as bad input: exit status 2 (not a signal), nothing on stdout, and one line
    /// on stderr that names `file` and says `what`.
    fn refused(&self, file: &Path, what: &str) {
        let ctx = format!("lineup {:?}\nstderr: {}", self.args, self.stderr);
        assert_eq!(self.code, Some(2), "{ctx}");
        assert!(!self.stderr.contains("panicked"), "{ctx}");
        assert!(self.stdout.is_empty(), "partial output; {ctx}");
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{ctx}");
        assert!(lines[0].starts_with("lineup: "), "{ctx}");
        assert!(lines[0].contains(&file.display().to_string()), "{ctx}");
        assert!(lines[0].contains(what), "{ctx}");
    }

    fn ok(&self) -> String {
        assert_eq!(
            self.code,
            Some(0),
            "lineup {:?}\nstderr: {}",
            self.args,
            self.stderr
        );
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// A fresh temporary directory, removed when dropped.
struct Temp(PathBuf);

impl Temp {
    fn new(name: &str) -> Temp {
        let dir = std::env::temp_dir().join(format!(
            "lineup-limits-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Temp(dir)
    }

    fn file(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A named pipe at `path`.
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// Writes `bytes` into the FIFO at `path` (once lineup opens it), then closes it; with
/// `endless`, writes them again and again until lineup stops reading.
fn feed_fifo(path: PathBuf, bytes: Vec<u8>, endless: bool) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Ok(mut w) = std::fs::OpenOptions::new().write(true).open(&path) else {
            return;
        };
        loop {
            if w.write_all(&bytes).is_err() || !endless {
                return;
            }
        }
    })
}

// ---------------------------------------------------------------------------------------
// A minimal BTF writer for the crafted inputs.
// ---------------------------------------------------------------------------------------

/// Type records of a BTF blob; strings "int", "s", "x", "f" at offsets 1, 5, 7, 9.
struct BtfTypes(Vec<u8>);

const INT_NAME: u32 = 1;
const S_NAME: u32 = 5;
const X_NAME: u32 = 7;

impl BtfTypes {
    fn new() -> Self {
        BtfTypes(Vec::new())
    }
    fn word(&mut self, w: u32) {
        self.0.extend_from_slice(&w.to_le_bytes());
    }
    fn head(&mut self, name: u32, kind: u32, vlen: u32, size_or_type: u32) {
        self.word(name);
        self.word((kind << 24) | vlen);
        self.word(size_or_type);
    }
    /// `int`, 4 bytes, signed.
    fn int(&mut self) {
        self.head(INT_NAME, 1, 0, 4);
        self.word((1 << 24) | 32);
    }
    /// `struct s { TYPE x; }` of `size` bytes.
    fn struct_s(&mut self, size: u32, member_type: u32) {
        self.head(S_NAME, 4, 1, size);
        self.word(X_NAME);
        self.word(member_type);
        self.word(0);
    }
    fn blob(&self) -> Vec<u8> {
        let strings = b"\0int\0s\0x\0f\0";
        let mut out = Vec::new();
        out.extend_from_slice(&0xEB9F_u16.to_le_bytes());
        out.extend_from_slice(&[1, 0]);
        for w in [
            24u32,
            0,
            self.0.len() as u32,
            self.0.len() as u32,
            strings.len() as u32,
        ] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&self.0);
        out.extend_from_slice(strings);
        out
    }
}

// ---------------------------------------------------------------------------------------
// 1. A profile's cache-line size.
// ---------------------------------------------------------------------------------------

/// A saved profile with `cacheline_size` 2^40 was read and diagnosed without end; the file
/// value is held to the `--cacheline-size` bounds.
#[test]
fn profile_cacheline_size_is_bounded_like_the_flag() {
    let t = Temp::new("profile");
    let good = t.path("p.json");
    run(&["import", "--c2c", PASTE, "-o", s(&good)]).ok();
    let text = std::fs::read_to_string(&good).unwrap();
    assert!(text.contains("\"cacheline_size\": 64,"), "{text:.300}");
    let bad = t.file(
        "p40.json",
        text.replacen(
            "\"cacheline_size\": 64,",
            "\"cacheline_size\": 1099511627776,",
            1,
        ),
    );
    for cmd in [
        &["diagnose", "--type", "task_group", "--btf", BTF][..],
        &[
            "optimize",
            "--type",
            "task_group",
            "--btf",
            BTF,
            "--machine",
            "icelake-2s",
        ][..],
    ] {
        let mut args = cmd.to_vec();
        args.extend(["--profile", s(&bad)]);
        run(&args).refused(
            &bad,
            "cacheline_size 1099511627776 is not a power of two from 8 to 4096",
        );
    }
    // A sketch's and a machine file's line size too.
    let sketch = t.file(
        "big_line.toml",
        "[machine]\ncacheline_size = 1099511627776\n[[type]]\nname = \"task_group\"\n\
         [[type.access]]\nfield = \"load_avg\"\nkind = \"rmw\"\nweight = 1\n",
    );
    run(&["import", "--sketch", s(&sketch)]).refused(&sketch, "cacheline_size 1099511627776");
}

// ---------------------------------------------------------------------------------------
// 2. A header of 30,000 nested structs.
// ---------------------------------------------------------------------------------------

/// 360 KB of `struct {` nested 30,000 deep took over 7.9 GB; now refused at the 64th level,
/// with the line.
#[test]
fn deeply_nested_header_is_refused_with_its_line() {
    let t = Temp::new("header");
    let n = 30_000;
    let text = format!(
        "struct task_group {{\n{}int x;\n{}}};\n",
        "struct {\n".repeat(n),
        "};\n".repeat(n)
    );
    assert!(text.len() > 350_000);
    let h = t.file("nested.h", &text);
    run(&[
        "optimize",
        "--type",
        "task_group",
        "--btf",
        BTF,
        "--c2c",
        PASTE,
        "--machine",
        "icelake-2s",
        "--header",
        s(&h),
    ])
    .refused(&h, "line 65: braces nested deeper than 64 levels");
    // As a candidate layout: refused as C, then not pahole text either, in one line.
    let r = run(&[
        "predict",
        "--type",
        "task_group",
        "--btf",
        BTF,
        "--c2c",
        PASTE,
        "--machine",
        "icelake-2s",
        "--layout",
        s(&h),
    ]);
    r.refused(&h, "");
}

// ---------------------------------------------------------------------------------------
// 3. A contract of 100,000 members.
// ---------------------------------------------------------------------------------------

#[test]
fn contract_member_count_and_pairs_are_bounded() {
    let t = Temp::new("contract");
    // One member a line (870 KB in all), as a generated file would be.
    let many = vec!["\"load_avg\""; 100_000].join(",\n    ");
    let c = t.file(
        "many.contract.toml",
        format!("schema = 1\ntype = \"task_group\"\n[[separate]]\nmembers = [{many}]\n"),
    );
    assert!(c.metadata().unwrap().len() > 870_000);
    run(&["check", "--btf", BTF, s(&c)]).refused(
        &c,
        "names 100000 members in its rules; a contract names at most 16384",
    );
    run(&["check", "--asserts", "kernel", s(&c)]).refused(&c, "names 100000 members");
    // Under the member bound, the pairs of one rule are bounded too (1000 members: 499,500).
    let thousand: Vec<String> = (0..1000).map(|i| format!("\"m{i}\"")).collect();
    let c = t.file(
        "pairs.contract.toml",
        format!(
            "schema = 1\ntype = \"task_group\"\n[[separate]]\nmembers = [{}]\n",
            thousand.join(", ")
        ),
    );
    run(&["check", "--btf", BTF, s(&c)]).refused(&c, "its rules relate 499500 member pairs");
}

// ---------------------------------------------------------------------------------------
// 4. 10^5 definitions of one name.
// ---------------------------------------------------------------------------------------

/// 10^5 structs named `s` took 76 s for one `lineup layout` (each definition looked up in
/// a list of all of them); each is laid out once, labelled with the count.
#[test]
fn many_definitions_of_one_name_lay_out_in_linear_time() {
    let t = Temp::new("same");
    let n = 100_000;
    let mut b = BtfTypes::new();
    b.int();
    for i in 0..n {
        // Distinct sizes: every definition is its own (none merged as a duplicate).
        b.struct_s(4 + 4 * (i % 1000) + 4000 * (i / 1000), 1);
    }
    let f = t.file("same.btf", b.blob());
    let out = run(&["layout", "--btf", s(&f), "s"]).ok();
    assert_eq!(out.matches("struct s {").count(), n as usize);
    assert_eq!(
        out.matches("/* struct s: one of 100000 definitions")
            .count(),
        n as usize
    );
    let all = run(&["layout", "--btf", s(&f), "--all"]).ok();
    assert_eq!(all.matches("struct s {").count(), n as usize);
}

// ---------------------------------------------------------------------------------------
// 5. A prototype whose thousands of parameters point back at it.
// ---------------------------------------------------------------------------------------

/// A 40 KB BTF: `struct s { int (*x)(P, P, ...); }` where P is the pointer to that same
/// prototype, 5000 times. Its C name was 262 MB (1.3 GB to make); now a bounded name with
/// a marker.
#[test]
fn self_referencing_prototype_names_stay_small() {
    let t = Temp::new("proto");
    let params = 5000;
    let mut b = BtfTypes::new();
    b.int(); // [1]
    b.head(0, 13, params, 1); // [2] int (P, P, ...)
    for _ in 0..params {
        b.word(0);
        b.word(3);
    }
    b.head(0, 2, 0, 2); // [3] P: pointer to [2]
    b.struct_s(8, 3); // [4]
    let blob = b.blob();
    assert!(blob.len() < 48 << 10);
    let f = t.file("proto.btf", blob);
    for cmd in [
        &["layout", "s"][..],
        &["layout", "--json", "s"][..],
        &["layout", "--all"][..],
    ] {
        let mut args = cmd.to_vec();
        args.extend(["--btf", s(&f)]);
        let out = run(&args).ok();
        assert!(out.contains("<type loop>"), "{out:.400}");
        assert!(
            out.len() < 1 << 20,
            "lineup {args:?}: {} bytes of output",
            out.len()
        );
    }
}

// ---------------------------------------------------------------------------------------
// 6. A sketch of 10^4 accesses.
// ---------------------------------------------------------------------------------------

fn sketch(accesses: usize, functions: usize) -> String {
    let fields = [
        "css", "se", "cfs_rq", "shares", "load_avg", "rt_se", "rt_rq", "parent", "siblings",
        "children",
    ];
    let mut out = String::from("[machine]\ncpus = 64\n[[type]]\nname = \"task_group\"\n");
    for i in 0..accesses {
        out.push_str(&format!(
            "[[type.access]]\nfield = \"{}\"\nkind = \"{}\"\nby = \"f{}\"\nweight = {}\ncpus = \"all\"\n",
            fields[i % fields.len()],
            ["load", "store", "rmw"][i % 3],
            i % functions,
            1 + i % 7
        ));
    }
    out
}

/// 10^4 accesses (each from its own function) took 61 s to optimize; a sketch holds at most
/// 1024, far more than any written by hand, and one that large is optimized.
#[test]
fn sketch_access_count_is_bounded() {
    let t = Temp::new("sketch");
    let big = t.file("big.toml", sketch(10_000, 10_000));
    let optimize = |p: &Path| {
        run(&[
            "optimize",
            "--type",
            "task_group",
            "--btf",
            BTF,
            "--machine",
            "icelake-2s",
            "--sketch",
            s(p),
        ])
    };
    optimize(&big).refused(
        &big,
        "sketch: 10000 accesses ([[type.access]]); a sketch holds at most 1024",
    );
    let at_limit = t.file("limit.toml", sketch(1024, 1024));
    assert!(optimize(&at_limit).ok().contains("task_group"));
}

// ---------------------------------------------------------------------------------------
// 7. Text that never ends.
// ---------------------------------------------------------------------------------------

/// Every text evidence flag, and the other text inputs, with a file of one line that never
/// ends (2 MiB, no newline) and a 2 GB sparse file: refused in one line, after reading at
/// most 1 MiB (or nothing, for the sparse file's size).
#[test]
fn endless_lines_and_huge_text_files_are_refused() {
    let t = Temp::new("text");
    let long = t.file("long.txt", vec![b'x'; 2 << 20]);
    let sparse = t.path("sparse.txt");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(2_000_000_000)
        .unwrap();
    for flag in [
        "--c2c",
        "--perf-script",
        "--perf-typeoff",
        "--sketch",
        "--profile",
    ] {
        run(&["import", flag, s(&long)]).refused(&long, "line 1 is longer than 1 MiB");
        run(&["import", flag, s(&sparse)])
            .refused(&sparse, "1.9 GiB of text; lineup reads at most 1 GiB");
    }
    let base = [
        "optimize",
        "--type",
        "task_group",
        "--btf",
        BTF,
        "--c2c",
        PASTE,
        "--machine",
    ];
    // A header, a candidate layout, a machine file, a contract, a diff side.
    let mut args = base.to_vec();
    args.extend(["icelake-2s", "--header", s(&long)]);
    run(&args).refused(&long, "line 1 is longer than 1 MiB");
    let mut args = base.to_vec();
    args.extend([s(&long)]);
    run(&args).refused(&long, "line 1 is longer than 1 MiB");
    run(&["check", "--btf", BTF, s(&long)]).refused(&long, "line 1 is longer than 1 MiB");
    run(&["check", "--btf", BTF, s(&sparse)]).refused(&sparse, "1.9 GiB of text");
    run(&["diff", "-C", "task_group", BTF, s(&long)]).refused(&long, "line 1 is longer than 1 MiB");
}

/// An endless stream (what `/dev/zero` gives) through a FIFO: the text readers stop at
/// the first 1 MiB line, whatever the size.
#[test]
fn endless_stream_of_text_is_refused_after_one_line() {
    let t = Temp::new("stream");
    for flag in ["--c2c", "--perf-script"] {
        let fifo = t.path(&format!("zeros{flag}"));
        mkfifo(&fifo);
        let feeder = feed_fifo(fifo.clone(), vec![0u8; 1 << 16], true);
        run(&["import", flag, s(&fifo)]).refused(&fifo, "line 1 is longer than 1 MiB");
        feeder.join().unwrap();
    }
}

// ---------------------------------------------------------------------------------------
// 8. Binary inputs from a pipe.
// ---------------------------------------------------------------------------------------

/// `--btf <(cat f)` and `--btf /dev/stdin` said "empty file": a pipe is read to its end.
#[test]
fn btf_and_perf_data_read_from_pipes() {
    let t = Temp::new("pipe");
    let btf = std::fs::read(common::bundled_btf()).unwrap();
    let want = run(&["layout", "--btf", BTF, "task_group"]).ok();
    let body = |out: &str| out.lines().skip(1).collect::<Vec<_>>().join("\n");
    let from_stdin = run_with(
        &["layout", "--btf", "/dev/stdin", "task_group"],
        Some(btf.clone()),
    )
    .ok();
    assert!(
        from_stdin.contains("struct task_group {"),
        "{from_stdin:.300}"
    );
    assert_eq!(body(&from_stdin), body(&want));
    let fifo = t.path("btf.fifo");
    mkfifo(&fifo);
    let feeder = feed_fifo(fifo.clone(), btf, false);
    let from_fifo = run(&["layout", "--btf", s(&fifo), "task_group"]).ok();
    feeder.join().unwrap();
    assert_eq!(body(&from_fifo), body(&want));
    // perf.data too (it was mapped, which a pipe cannot be).
    let data =
        std::fs::read(common::repo().join("fuzz/corpus/perf_data/mem_classes.data")).unwrap();
    let profile = |out: String| {
        let mut v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["provenance"]["input"] = serde_json::Value::Null;
        v["provenance"]["loaded_from"] = serde_json::Value::Null;
        v
    };
    let want = profile(
        run(&[
            "import",
            "--perf-data",
            "fuzz/corpus/perf_data/mem_classes.data",
        ])
        .ok(),
    );
    let piped = profile(run_with(&["import", "--perf-data", "/dev/stdin"], Some(data)).ok());
    assert_eq!(piped, want);
    // An empty pipe is still an empty file.
    run_with(&["layout", "--btf", "/dev/stdin", "s"], Some(Vec::new()))
        .refused(Path::new("/dev/stdin"), "empty file");
}

// ---------------------------------------------------------------------------------------
// 9. One 4 GiB struct among others in a DWARF object.
// ---------------------------------------------------------------------------------------

/// A struct of 2^32 + 4 bytes rejected the whole object; now it alone is left out, said in
/// one warning, and the object's other structs read.
#[test]
fn oversized_dwarf_struct_is_left_out_alone() {
    let t = Temp::new("dwarf");
    let src = t.file(
        "big.c",
        "struct big { int head; char big[1ull << 32]; };\n\
         struct ok { int a; long b; };\n\
         struct holder { struct big *p; struct ok o; };\n\
         struct big *gp; struct ok go; struct holder gh;\n",
    );
    let obj = t.path("big.o");
    let cc = Command::new("cc")
        .args(["-g", "-c", "-o", s(&obj), s(&src)])
        .output()
        .expect("a C compiler (cc)");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let r = run(&["layout", "--dwarf", s(&obj), "ok", "holder"]);
    let out = r.ok();
    assert!(
        out.contains("struct ok {") && out.contains("struct holder {"),
        "{out}"
    );
    assert!(out.contains("struct big *"), "{out}");
    let warnings: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(warnings.len(), 1, "{}", r.stderr);
    assert!(
        warnings[0]
            .contains("1 struct or union larger than 4 GiB left out: 'big' (4294967300 bytes)"),
        "{}",
        r.stderr
    );
    let r = run(&["layout", "--dwarf", s(&obj), "big"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("no struct or union named 'big'"),
        "{}",
        r.stderr
    );
}
