//! `lineup cc` / `lineup c++`: run the C or C++ compiler with every load and store
//! instrumented, and link lineup's recording runtime instead of ThreadSanitizer's.
//!
//! Compiling: `-g` first (DWARF for attribution; a later `-g0` of the user's still wins), the
//! user's arguments unchanged (their optimization level is what gets recorded), then
//! `-fsanitize=thread` without the function entry/exit hooks lineup does not use. Linking:
//! the runtime object, compiled once per compiler and runtime version into a cache
//! directory, and not the sanitizer runtime (clang: `-fno-sanitize-link-runtime`; gcc:
//! `-B`/`-L` to a directory whose empty `libtsan.a` and `libtsan_preinit.o` stand in for
//! gcc's).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The runtime's C source, compiled on first use.
pub const RUNTIME_SOURCE: &str = include_str!("../../runtime/lineup_rt.c");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Clang,
    Gcc,
}

/// The compiler to run: `$LINEUP_CC` / `$LINEUP_CXX`, else clang when installed, else gcc.
pub fn choose_compiler(cxx: bool) -> (String, Family) {
    let var = if cxx { "LINEUP_CXX" } else { "LINEUP_CC" };
    if let Ok(c) = std::env::var(var)
        && !c.is_empty()
    {
        let family = family_of(&c);
        return (c, family);
    }
    let (clang, gcc) = if cxx {
        ("clang++", "g++")
    } else {
        ("clang", "gcc")
    };
    if on_path(clang) {
        (clang.to_string(), Family::Clang)
    } else {
        (gcc.to_string(), Family::Gcc)
    }
}

/// clang or gcc, by name, else by asking it.
pub fn family_of(compiler: &str) -> Family {
    let base = Path::new(compiler)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if base.contains("clang") {
        return Family::Clang;
    }
    if base.contains("gcc") || base.contains("g++") {
        return Family::Gcc;
    }
    match Command::new(compiler).arg("--version").output() {
        Ok(o) if String::from_utf8_lossy(&o.stdout).contains("clang") => Family::Clang,
        _ => Family::Gcc,
    }
}

fn on_path(exe: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|d| {
            let p = d.join(exe);
            p.is_file()
        })
    })
}

/// Options that take the next argument as their value.
const TAKES_VALUE: &[&str] = &[
    "-o",
    "-I",
    "-D",
    "-U",
    "-L",
    "-l",
    "-x",
    "-include",
    "-imacros",
    "-isystem",
    "-idirafter",
    "-iquote",
    "-iprefix",
    "-isysroot",
    "--sysroot",
    "-MF",
    "-MT",
    "-MQ",
    "-Xlinker",
    "-Xassembler",
    "-Xpreprocessor",
    "-Xclang",
    "-mllvm",
    "-arch",
    "-target",
    "--param",
    "-T",
    "-z",
    "-u",
    "-e",
    "-aux-info",
    "-dumpbase",
    "-dumpdir",
    "-B",
];

/// What the compiler will do with these arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    /// It links an executable or shared object (no `-c`, `-S`, `-E`, ...) and has inputs.
    pub links: bool,
    pub shared: bool,
}

pub fn mode(args: &[OsString]) -> Mode {
    let mut stops = false;
    let mut inputs = false;
    let mut shared = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].to_string_lossy();
        match a.as_ref() {
            "-c" | "-S" | "-E" | "-M" | "-MM" | "-fsyntax-only" => stops = true,
            "-shared" => shared = true,
            _ if TAKES_VALUE.contains(&a.as_ref()) => i += 1,
            _ if !a.starts_with('-') || a == "-" => inputs = true,
            _ => {}
        }
        i += 1;
    }
    Mode {
        links: inputs && !stops,
        shared,
    }
}

/// The full argument list for the compiler. `runtime`: the runtime object (linked into
/// executables); `gcc_stubs`: the directory standing in for gcc's sanitizer libraries.
pub fn arguments(
    family: Family,
    user: &[OsString],
    runtime: Option<&Path>,
    gcc_stubs: Option<&Path>,
) -> Vec<OsString> {
    let m = mode(user);
    let mut out: Vec<OsString> = vec!["-g".into()];
    out.extend(user.iter().cloned());
    out.push("-fsanitize=thread".into());
    match family {
        Family::Clang => {
            out.push("-mllvm".into());
            out.push("-tsan-instrument-func-entry-exit=0".into());
            // clang drops the read of a read-then-write of one location (`x++`) as redundant
            // for race detection; both are accesses, as a cache (and perf c2c) sees them.
            // The compound form reports the pair in one call (`__tsan_read_writeN`, counted
            // as a load and a store), where -tsan-instrument-read-before-write made two:
            // at -O0, where every `+=` stays in memory, that was a fifth of all calls.
            // gcc instruments both already, with two calls.
            out.push("-mllvm".into());
            out.push("-tsan-compound-read-before-write".into());
        }
        Family::Gcc => out.push("--param=tsan-instrument-func-entry-exit=0".into()),
    }
    if m.links {
        match family {
            Family::Clang => out.push("-fno-sanitize-link-runtime".into()),
            Family::Gcc => {
                if let Some(dir) = gcc_stubs {
                    let mut b = OsString::from("-B");
                    b.push(dir.as_os_str());
                    b.push("/");
                    out.push(b);
                    let mut l = OsString::from("-L");
                    l.push(dir.as_os_str());
                    out.push(l);
                }
            }
        }
        if !m.shared
            && let Some(rt) = runtime
        {
            // A `-x LANG` of the user's applies to every input after it, the runtime's
            // object included: zstd's build pipes a probe through `-x c -`, and gcc then
            // compiled lineup_rt.o as C source (cc1 spinning on the binary for minutes).
            if user.iter().any(|a| a.to_string_lossy().starts_with("-x")) {
                out.push("-x".into());
                out.push("none".into());
            }
            out.push(rt.as_os_str().to_owned());
            out.push("-lpthread".into());
            out.push("-ldl".into());
            // The hooks stay in the dynamic symbol table, so that an instrumented shared
            // object the program dlopens later (built with `lineup cc -shared`, which
            // leaves them undefined) binds to them without -rdynamic.
            out.push("-Wl,--export-dynamic-symbol=__tsan_*".into());
        }
    }
    out
}

/// Where compiled runtimes are kept: `$LINEUP_CACHE_DIR`, `$XDG_CACHE_HOME/lineup`,
/// `$HOME/.cache/lineup`, else `.cache/lineup` in the home directory of the user's passwd
/// entry (`env -i`, systemd units and containers often have no HOME). Never a shared
/// directory: a runtime found in the temporary directory, where any local user can put one,
/// would be linked into the program (and run as whoever runs it). Err (one line) when none
/// of these names a directory.
pub fn cache_dir() -> Result<PathBuf, String> {
    if let Some(d) = std::env::var_os("LINEUP_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("lineup"));
    }
    if let Some(h) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(h).join(".cache/lineup"));
    }
    let uid = euid();
    match passwd(uid) {
        Some((_, home)) if home.is_absolute() => Ok(home.join(".cache/lineup")),
        _ => Err(format!(
            "lineup's cache: no LINEUP_CACHE_DIR, XDG_CACHE_HOME or HOME, and no home directory for {} in the user database: set LINEUP_CACHE_DIR to a directory of your own",
            who(uid)
        )),
    }
}

/// [`cache_dir`], created when missing (mode 0700) and checked: a directory of this user's
/// that no one else can write ([`trusted`]).
pub fn checked_cache_dir() -> Result<PathBuf, String> {
    let dir = cache_dir()?;
    private_dir(&dir)?;
    Ok(dir)
}

/// [`cache_dir`] when it exists, checked as [`checked_cache_dir`] does, for readers of the
/// cache (`--machine host`'s calibration): None when there is no cache, Err when there is
/// one that someone else could have written.
pub fn existing_cache_dir() -> Result<Option<PathBuf>, String> {
    let Ok(dir) = cache_dir() else {
        return Ok(None);
    };
    match std::fs::metadata(&dir) {
        Ok(meta) if meta.is_dir() => {
            trusted(&dir, &meta, "lineup's cache directory")?;
            Ok(Some(dir))
        }
        Ok(_) => Err(format!(
            "{}: lineup's cache is not a directory: set LINEUP_CACHE_DIR to a directory of your own",
            dir.display()
        )),
        Err(_) => Ok(None),
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The user name and home directory of `uid` from the user database (getpwuid_r).
fn passwd(uid: u32) -> Option<(String, PathBuf)> {
    use std::os::unix::ffi::OsStrExt;
    let mut buf: Vec<libc::c_char> = vec![0; 1024];
    loop {
        // SAFETY: passwd is plain data (integers and pointers) for which all-zero is valid.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call, buf for buf.len() bytes; on success
        // pwd's strings point into buf, which outlives their use below.
        let rc =
            unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut found) };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || found.is_null() {
            return None;
        }
        let text = |p: *const libc::c_char| {
            if p.is_null() {
                &[][..]
            } else {
                // SAFETY: getpwuid_r filled p with a NUL-terminated string inside buf.
                unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes()
            }
        };
        let name = String::from_utf8_lossy(text(pwd.pw_name)).into_owned();
        let home = PathBuf::from(std::ffi::OsStr::from_bytes(text(pwd.pw_dir)));
        return Some((name, home));
    }
}

/// "uid 65534 (nobody)", for messages.
fn who(uid: u32) -> String {
    match passwd(uid) {
        Some((name, _)) if !name.is_empty() => format!("uid {uid} ({name})"),
        _ => format!("uid {uid} (no user name)"),
    }
}

/// A cache directory or file lineup may use: owned by the user running lineup (its
/// effective uid) and writable by no one else. Err names the path, its owner or mode, and
/// what to do.
fn trusted(path: &Path, meta: &std::fs::Metadata, what: &str) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let me = euid();
    if meta.uid() != me {
        return Err(format!(
            "{}: {what} is owned by {}, not by {} running lineup: refusing to use it; set LINEUP_CACHE_DIR to a directory of your own",
            path.display(),
            who(meta.uid()),
            who(me)
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        let by = match (mode & 0o020 != 0, mode & 0o002 != 0) {
            (true, true) => "its group and others",
            (true, false) => "its group",
            _ => "others",
        };
        return Err(format!(
            "{}: {what} is writable by {by} (mode {mode:04o}): refusing to use it; `chmod go-w` it or set LINEUP_CACHE_DIR to a directory of your own",
            path.display()
        ));
    }
    Ok(())
}

/// Creates `dir` (and missing parents) with mode 0700 when missing, then checks it.
fn private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            format!(
                "{}: cannot create lineup's cache: {e}; set LINEUP_CACHE_DIR to a directory of your own",
                dir.display()
            )
        })?;
    let meta = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!(
            "{}: lineup's cache is not a directory: set LINEUP_CACHE_DIR to a directory of your own",
            dir.display()
        ));
    }
    trusted(dir, &meta, "lineup's cache directory")
}

/// A file of the cache: Ok(true) when it is there and [`trusted`], Ok(false) when it is
/// not there. Opened without following a symbolic link (and without waiting on a FIFO).
fn cached(path: &Path, what: &str) -> Result<bool, String> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    match opened {
        Ok(f) => {
            let meta = f
                .metadata()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if !meta.is_file() {
                return Err(format!(
                    "{}: {what} is not a regular file: refusing to use it; remove it or set LINEUP_CACHE_DIR to a directory of your own",
                    path.display()
                ));
            }
            trusted(path, &meta, what)?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            let owner = std::fs::symlink_metadata(path)
                .map(|m| format!(" owned by {}", who(m.uid())))
                .unwrap_or_default();
            Err(format!(
                "{}: {what} is a symbolic link{owner}: refusing to follow it; remove it or set LINEUP_CACHE_DIR to a directory of your own",
                path.display()
            ))
        }
        Err(e) => Err(format!("{}: cannot open {what}: {e}", path.display())),
    }
}

/// Writes a new file (mode 0600) that must not exist yet.
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| format!("{}: cannot write: {e}", path.display()))
}

/// A directory of this process's own inside a cache directory (created exclusively, mode
/// 0700), where the compiler writes what then is renamed into the cache; removed on drop.
struct Staging(PathBuf);

impl Staging {
    fn new(dir: &Path) -> Result<Staging, String> {
        use std::os::unix::fs::DirBuilderExt;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let mut last = None;
        for attempt in 0..16u32 {
            let path = dir.join(format!(
                ".staging-{}-{nanos:08x}-{attempt}",
                std::process::id()
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(Staging(path)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(format!("{}: cannot create: {e}", path.display())),
            }
        }
        Err(format!(
            "{}: cannot create a staging directory: {}",
            dir.display(),
            last.map(|e| e.to_string()).unwrap_or_default()
        ))
    }

    /// Moves the compiler's output `name` into the cache as `to` (mode 0600).
    fn install(&self, name: &str, to: &Path) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt;
        let from = self.0.join(name);
        std::fs::set_permissions(&from, std::fs::Permissions::from_mode(0o600))
            .and_then(|()| std::fs::rename(&from, to))
            .map_err(|e| format!("{}: cannot write: {e}", to.display()))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// The runtime compiled by `compiler`, from the cache ([`checked_cache_dir`]; a cached
/// object must be a regular file of this user's that no one else can write) or compiled now
/// (in a staging directory of this process's own, then renamed into place).
pub fn runtime_object(compiler: &str, family: Family) -> Result<PathBuf, String> {
    let dir = checked_cache_dir()?;
    let version = Command::new(compiler)
        .arg("--version")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    let key = fnv(&[RUNTIME_SOURCE.as_bytes(), compiler.as_bytes(), &version]);
    let obj = dir.join(format!("lineup_rt-{key:016x}.o"));
    if cached(&obj, "the cached runtime")? {
        return Ok(obj);
    }
    let stage = Staging::new(&dir)?;
    let src = stage.0.join("lineup_rt.c");
    write_new(&src, RUNTIME_SOURCE.as_bytes())?;
    let mut cmd = Command::new(compiler);
    cmd.args([
        "-x",
        "c",
        "-std=gnu11",
        "-O2",
        "-g",
        "-fPIC",
        "-fno-builtin",
    ]);
    if cfg!(target_arch = "x86_64") {
        cmd.arg("-mcx16");
    }
    if family == Family::Gcc {
        cmd.arg("-fno-tree-loop-distribute-patterns");
    }
    cmd.arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(stage.0.join("lineup_rt.o"));
    let out = cmd
        .output()
        .map_err(|e| format!("{compiler}: cannot run: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| l.contains("error"))
            .unwrap_or("failed");
        return Err(format!(
            "{compiler}: cannot compile lineup's runtime: {first}"
        ));
    }
    stage.install("lineup_rt.o", &obj)?;
    Ok(obj)
}

/// gcc's `-fsanitize=thread` link line asks for `libtsan_preinit.o` and `-ltsan`; this
/// directory has empty stand-ins for both. gcc also looks in a `-B` directory for the
/// programs it runs, so the directory is checked as the cache is, and so are both files.
pub fn gcc_stub_dir(compiler: &str) -> Result<PathBuf, String> {
    let dir = checked_cache_dir()?.join("gcc-stubs");
    private_dir(&dir)?;
    let archive = dir.join("libtsan.a");
    let preinit = dir.join("libtsan_preinit.o");
    let have_archive = cached(&archive, "gcc's stand-in libtsan.a")?;
    let have_preinit = cached(&preinit, "gcc's stand-in libtsan_preinit.o")?;
    if have_archive && have_preinit {
        return Ok(dir);
    }
    let stage = Staging::new(&dir)?;
    if !have_archive {
        write_new(&stage.0.join("libtsan.a"), b"!<arch>\n")?;
        stage.install("libtsan.a", &archive)?;
    }
    if !have_preinit {
        let src = stage.0.join("empty.c");
        write_new(&src, b"/* stands in for gcc's libtsan_preinit.o */\n")?;
        let out = Command::new(compiler)
            .args(["-x", "c", "-c"])
            .arg(&src)
            .arg("-o")
            .arg(stage.0.join("libtsan_preinit.o"))
            .output()
            .map_err(|e| format!("{compiler}: cannot run: {e}"))?;
        if !out.status.success() {
            return Err(format!("{compiler}: cannot compile an empty file"));
        }
        stage.install("libtsan_preinit.o", &preinit)?;
    }
    Ok(dir)
}

/// Does the ELF file carry lineup's runtime (its `.lineup_rt` marker section)?
pub fn has_runtime(elf: &[u8]) -> bool {
    use object::Object;
    object::File::parse(elf)
        .map(|f| f.section_by_name(".lineup_rt").is_some())
        .unwrap_or(false)
}

/// For messages: the arguments as a shell would show them.
pub fn display_args(compiler: &str, args: &[OsString]) -> String {
    let mut s = compiler.to_string();
    for a in args {
        s.push(' ');
        let a = a.to_string_lossy();
        if a.contains(' ') || a.is_empty() {
            s.push_str(&format!("'{a}'"));
        } else {
            s.push_str(&a);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn compile_only_commands_do_not_link() {
        assert!(!mode(&args("-O2 -c a.c -o a.o")).links);
        assert!(!mode(&args("-E a.c")).links);
        assert!(mode(&args("-O2 a.c -o a")).links);
        assert!(mode(&args("a.o b.o -o prog -lm")).links);
        assert!(!mode(&args("--version")).links);
        // `-o` takes a value that is not an input.
        assert!(!mode(&args("-o out")).links);
        assert!(mode(&args("-shared a.c -o liba.so")).shared);
    }

    #[test]
    fn link_lines_get_the_runtime_and_not_the_sanitizer_runtime() {
        let rt = Path::new("/cache/rt.o");
        let out = arguments(Family::Clang, &args("-O2 a.c -o a"), Some(rt), None);
        let text: Vec<String> = out.iter().map(|a| a.to_string_lossy().into()).collect();
        assert_eq!(text[0], "-g");
        assert!(text.contains(&"-fsanitize=thread".to_string()));
        assert!(text.contains(&"-fno-sanitize-link-runtime".to_string()));
        assert!(text.contains(&"-tsan-compound-read-before-write".to_string()));
        assert!(text.contains(&"/cache/rt.o".to_string()));
        // The user's flags keep their order, after our -g.
        assert_eq!(&text[1..5], ["-O2", "a.c", "-o", "a"]);
        let out = arguments(
            Family::Gcc,
            &args("-c a.c"),
            Some(rt),
            Some(Path::new("/s")),
        );
        let text: Vec<String> = out.iter().map(|a| a.to_string_lossy().into()).collect();
        assert!(
            !text
                .iter()
                .any(|a| a.ends_with("rt.o") || a.starts_with("-B"))
        );
        assert!(text.contains(&"--param=tsan-instrument-func-entry-exit=0".to_string()));
    }

    /// A source read through `-x c -` (a build's probe): the runtime's object after it is
    /// an object again (`-x none`), not C source; without `-x`, nothing is added.
    #[test]
    fn a_language_given_with_x_does_not_apply_to_the_runtime_object() {
        let rt = Path::new("/cache/rt.o");
        for user in ["-x c - -o probe", "-xc - -o probe"] {
            let out = arguments(Family::Gcc, &args(user), Some(rt), None);
            let text: Vec<String> = out.iter().map(|a| a.to_string_lossy().into()).collect();
            let at = text.iter().position(|a| a == "/cache/rt.o").unwrap();
            assert_eq!(&text[at - 2..at], ["-x", "none"], "{user}: {text:?}");
        }
        let out = arguments(Family::Gcc, &args("a.c -o a"), Some(rt), None);
        assert!(!out.iter().any(|a| a == "none"), "{out:?}");
    }
}
