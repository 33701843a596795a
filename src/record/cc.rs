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
            out.push(rt.as_os_str().to_owned());
            out.push("-lpthread".into());
            out.push("-ldl".into());
        }
    }
    out
}

/// Where compiled runtimes are kept: `$LINEUP_CACHE_DIR`, `$XDG_CACHE_HOME/lineup`,
/// `~/.cache/lineup`, or the temporary directory.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("LINEUP_CACHE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("lineup");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(h).join(".cache/lineup");
    }
    std::env::temp_dir().join("lineup-cache")
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

/// The runtime compiled by `compiler`, from the cache or compiled now (atomically: a
/// temporary file renamed into place).
pub fn runtime_object(compiler: &str, family: Family) -> Result<PathBuf, String> {
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    let version = Command::new(compiler)
        .arg("--version")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    let key = fnv(&[RUNTIME_SOURCE.as_bytes(), compiler.as_bytes(), &version]);
    let obj = dir.join(format!("lineup_rt-{key:016x}.o"));
    if obj.is_file() {
        return Ok(obj);
    }
    let unique = format!("{}-{}", std::process::id(), key);
    let src = dir.join(format!("lineup_rt-{unique}.c"));
    std::fs::write(&src, RUNTIME_SOURCE)
        .map_err(|e| format!("{}: cannot write: {e}", src.display()))?;
    let tmp = dir.join(format!("lineup_rt-{unique}.o.tmp"));
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
    cmd.arg("-c").arg(&src).arg("-o").arg(&tmp);
    let out = cmd
        .output()
        .map_err(|e| format!("{compiler}: cannot run: {e}"))?;
    let _ = std::fs::remove_file(&src);
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| l.contains("error"))
            .unwrap_or("failed");
        return Err(format!(
            "{compiler}: cannot compile lineup's runtime: {first}"
        ));
    }
    std::fs::rename(&tmp, &obj).map_err(|e| format!("{}: cannot write: {e}", obj.display()))?;
    Ok(obj)
}

/// gcc's `-fsanitize=thread` link line asks for `libtsan_preinit.o` and `-ltsan`; this
/// directory has empty stand-ins for both.
pub fn gcc_stub_dir(compiler: &str) -> Result<PathBuf, String> {
    let dir = cache_dir().join("gcc-stubs");
    let archive = dir.join("libtsan.a");
    let preinit = dir.join("libtsan_preinit.o");
    if archive.is_file() && preinit.is_file() {
        return Ok(dir);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    let unique = std::process::id();
    let tmp_a = dir.join(format!("libtsan.a.{unique}"));
    std::fs::write(&tmp_a, b"!<arch>\n")
        .map_err(|e| format!("{}: cannot write: {e}", tmp_a.display()))?;
    std::fs::rename(&tmp_a, &archive)
        .map_err(|e| format!("{}: cannot write: {e}", archive.display()))?;
    let src = dir.join(format!("empty-{unique}.c"));
    std::fs::write(&src, "/* stands in for gcc's libtsan_preinit.o */\n")
        .map_err(|e| format!("{}: cannot write: {e}", src.display()))?;
    let tmp_o = dir.join(format!("libtsan_preinit.o.{unique}"));
    let out = Command::new(compiler)
        .args(["-x", "c", "-c"])
        .arg(&src)
        .arg("-o")
        .arg(&tmp_o)
        .output()
        .map_err(|e| format!("{compiler}: cannot run: {e}"))?;
    let _ = std::fs::remove_file(&src);
    if !out.status.success() {
        return Err(format!("{compiler}: cannot compile an empty file"));
    }
    std::fs::rename(&tmp_o, &preinit)
        .map_err(|e| format!("{}: cannot write: {e}", preinit.display()))?;
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
}
