//! `lineup cc`'s runtime cache cannot be used by another local user to run code as whoever
//! runs `lineup cc` (issue 23 item 4): the cache is never a shared directory (without
//! LINEUP_CACHE_DIR, XDG_CACHE_HOME and HOME it is the passwd entry's home, else lineup
//! refuses), it is created private (0700, files 0600), and a cache directory, cached runtime
//! or gcc stub that another user owns, or that group or others can write, or a symbolic
//! link in place of a cached file, is refused with a one-line error naming the path and the
//! owner.
//!
//! Everything happens in fresh temporary directories, except the first test (`env -i` as
//! the user running the tests), whose cache is that user's own `~/.cache/lineup` from the
//! user database. The tests that plant files of another user chown them to `nobody` (uid
//! 65534) and run lineup as other users with util-linux's `setpriv`: they need root, and
//! without it say so and check nothing. Needs a C compiler (clang or gcc; gcc for the gcc
//! stub test).

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const NOBODY: u32 = 65534;

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("record-security");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("p.c"), "int main(void) { return 0; }\n").unwrap();
        d
    })
}

/// A fresh directory of the test's own.
fn fresh(name: &str) -> PathBuf {
    let d = scratch().join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

fn is_root() -> bool {
    if euid() == 0 {
        return true;
    }
    eprintln!("not root: this test chowns files and runs lineup as other users; skipped");
    false
}

/// The user name and home of `uid` in the user database.
fn passwd(uid: u32) -> Option<(String, PathBuf)> {
    let out = Command::new("getent")
        .args(["passwd", &uid.to_string()])
        .output()
        .expect("getent");
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    let f: Vec<&str> = line.trim_end().split(':').collect();
    (out.status.success() && f.len() >= 6).then(|| (f[0].to_string(), PathBuf::from(f[5])))
}

/// `lineup cc p.c -o OUT` with the cache in `cache`, TMPDIR a fresh directory of its own,
/// `LINEUP_VERBOSE` (the compiler command, with the runtime's path, on stderr).
fn cc(cache: &Path, out: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lineup"));
    c.env("LINEUP_CACHE_DIR", cache)
        .env(
            "TMPDIR",
            fresh(&format!("tmp-{}", out.file_name().unwrap().display())),
        )
        .env("LINEUP_VERBOSE", "1")
        .arg("cc")
        .arg(scratch().join("p.c"))
        .arg("-o")
        .arg(out);
    c
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A refusal: exit status 2 (lineup's errors), one line on stderr, which names `path` and
/// holds every one of `words`.
fn assert_refused(o: &Output, path: &Path, words: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(&path.display().to_string()), "{err}");
    for w in words {
        assert!(err.contains(w), "{w:?} in {err}");
    }
    assert!(
        !err.contains("lineup: clang") && !err.contains("lineup: gcc"),
        "{err}"
    );
}

/// A cache with the runtime compiled by the default compiler (once per test binary).
fn populated() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let cache = scratch().join("populated");
        let o = cc(&cache, &scratch().join("populated-p")).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        cache
    })
}

/// A copy of the populated cache (files and modes as lineup made them, owned by us).
fn copy_of_cache(name: &str) -> PathBuf {
    let to = fresh(name);
    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o700)).unwrap();
    for e in std::fs::read_dir(populated()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
    to
}

fn runtime_in(cache: &Path) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("lineup_rt-") && n.ends_with(".o")
        })
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().mode() & 0o7777
}

#[test]
fn a_new_cache_is_private_and_used_again() {
    let cache = scratch().join("new").join("cache");
    let _ = std::fs::remove_dir_all(scratch().join("new"));
    let o = cc(&cache, &scratch().join("new-p")).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(mode(&cache), 0o700);
    let rt = runtime_in(&cache);
    assert_eq!(mode(&rt), 0o600);
    assert!(
        stderr(&o).contains(&rt.display().to_string()),
        "{}",
        stderr(&o)
    );
    // Nothing else left in it (the staging directory is gone).
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 1);
    let before = std::fs::metadata(&rt).unwrap().modified().unwrap();
    let o = cc(&cache, &scratch().join("new-p2")).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::metadata(&rt).unwrap().modified().unwrap(), before);
}

#[test]
fn without_home_the_cache_is_the_users_home_never_the_temporary_directory() {
    // `env -i`: no LINEUP_CACHE_DIR, XDG_CACHE_HOME or HOME; PATH for the compiler, and
    // TMPDIR an empty directory that must stay empty.
    let tmp = fresh("env-i-tmp");
    let shared = std::env::temp_dir().join("lineup-cache");
    let shared_before = shared.exists();
    let o = Command::new(env!("CARGO_BIN_EXE_lineup"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("TMPDIR", &tmp)
        .env("LINEUP_VERBOSE", "1")
        .arg("cc")
        .arg(scratch().join("p.c"))
        .arg("-o")
        .arg(scratch().join("env-i-p"))
        .output()
        .unwrap();
    let err = stderr(&o);
    let home = passwd(euid()).map(|(_, h)| h);
    let own_home = home
        .as_ref()
        .is_some_and(|h| std::fs::metadata(h).is_ok_and(|m| m.is_dir() && m.uid() == euid()));
    if own_home {
        assert!(o.status.success(), "{err}");
        let want = home.unwrap().join(".cache/lineup/lineup_rt-");
        assert!(err.contains(&want.display().to_string()), "{err}");
    } else {
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("LINEUP_CACHE_DIR"), "{err}");
    }
    assert!(!err.contains("lineup-cache"), "{err}");
    assert!(!err.contains(&tmp.display().to_string()), "{err}");
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    if !shared_before {
        assert!(!shared.exists(), "{}", shared.display());
    }
}

/// For runs as another user: a directory under the temporary directory (0755) holding a
/// copy of lineup and `p.c`, and in it `work`, owned by `uid`, for the run's cwd and TMPDIR.
/// (The repository's target directory may not be readable by other users.)
struct Foreign {
    base: PathBuf,
}

impl Foreign {
    fn new(name: &str, uid: u32) -> Foreign {
        let base =
            std::env::temp_dir().join(format!("lineup-security-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::copy(env!("CARGO_BIN_EXE_lineup"), base.join("lineup")).unwrap();
        std::fs::write(base.join("p.c"), "int main(void) { return 0; }\n").unwrap();
        let work = base.join("work");
        std::fs::create_dir(&work).unwrap();
        std::os::unix::fs::chown(&work, Some(uid), Some(uid)).unwrap();
        Foreign { base }
    }

    fn work(&self) -> PathBuf {
        self.base.join("work")
    }

    /// `lineup cc ../p.c -o p` as `uid` (util-linux's setpriv), environment `env` only
    /// (besides PATH, and TMPDIR the work directory).
    fn cc(&self, uid: u32, env: &[(&str, &Path)]) -> Output {
        let id = uid.to_string();
        let mut c = Command::new("setpriv");
        c.args(["--reuid", &id, "--regid", &id, "--clear-groups", "--"])
            .arg(self.base.join("lineup"))
            .args(["cc", "../p.c", "-o", "p"])
            .current_dir(self.work())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap())
            .env("TMPDIR", self.work());
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().expect("setpriv (util-linux)")
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

#[test]
fn without_any_home_lineup_cc_refuses_in_one_line() {
    if !is_root() {
        return;
    }
    // A uid the user database does not know, under `env -i`.
    let uid = (4_000_000u32..).find(|u| passwd(*u).is_none()).unwrap();
    let f = Foreign::new("nohome", uid);
    let o = f.cc(uid, &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(&format!("uid {uid}")), "{err}");
    assert!(err.contains("set LINEUP_CACHE_DIR"), "{err}");
    assert_eq!(std::fs::read_dir(f.work()).unwrap().count(), 0);
}

#[test]
fn a_cache_directory_others_can_write_is_refused() {
    for m in [0o777, 0o775, 0o757, 0o1777] {
        let cache = copy_of_cache(&format!("writable-{m:o}"));
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(m)).unwrap();
        let o = cc(&cache, &scratch().join(format!("writable-{m:o}-p")))
            .output()
            .unwrap();
        assert_refused(&o, &cache, &["writable by", &format!("mode {m:04o}")]);
    }
}

#[test]
fn a_cached_runtime_others_can_write_or_a_symbolic_link_is_refused() {
    let cache = copy_of_cache("writable-object");
    let rt = runtime_in(&cache);
    std::fs::set_permissions(&rt, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = cc(&cache, &scratch().join("writable-object-p"))
        .output()
        .unwrap();
    assert_refused(&o, &rt, &["writable by", "mode 0666"]);

    // A link in its place, to a good runtime elsewhere: not followed.
    let cache = copy_of_cache("symlink-object");
    let rt = runtime_in(&cache);
    std::fs::rename(&rt, cache.join("elsewhere.o")).unwrap();
    std::os::unix::fs::symlink(cache.join("elsewhere.o"), &rt).unwrap();
    let o = cc(&cache, &scratch().join("symlink-object-p"))
        .output()
        .unwrap();
    assert_refused(&o, &rt, &["symbolic link"]);
}

#[test]
fn a_cached_runtime_planted_by_another_user_is_refused_naming_its_owner() {
    if !is_root() {
        return;
    }
    let name = passwd(NOBODY).map(|(n, _)| n).unwrap_or_default();
    let cache = copy_of_cache("planted-object");
    let rt = runtime_in(&cache);
    std::os::unix::fs::chown(&rt, Some(NOBODY), Some(NOBODY)).unwrap();
    let out = scratch().join("planted-object-p");
    let o = cc(&cache, &out).output().unwrap();
    assert_refused(
        &o,
        &rt,
        &[&format!("owned by uid {NOBODY} ({name})"), "uid 0 (root)"],
    );
    assert!(!out.exists(), "nothing linked");

    // The whole directory planted: refused before anything in it is looked at.
    let cache = copy_of_cache("planted-dir");
    std::os::unix::fs::chown(&cache, Some(NOBODY), Some(NOBODY)).unwrap();
    let o = cc(&cache, &scratch().join("planted-dir-p"))
        .output()
        .unwrap();
    assert_refused(&o, &cache, &[&format!("owned by uid {NOBODY} ({name})")]);
}

#[test]
fn gcc_stubs_planted_by_another_user_are_refused() {
    if !is_root() {
        return;
    }
    let cache = fresh("gcc-stubs");
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
    let o = cc(&cache, &scratch().join("gcc-stubs-p"))
        .env("LINEUP_CC", "gcc")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let stubs = cache.join("gcc-stubs");
    assert_eq!(mode(&stubs), 0o700);
    for f in ["libtsan.a", "libtsan_preinit.o"] {
        assert_eq!(mode(&stubs.join(f)), 0o600, "{f}");
    }
    // gcc runs programs it finds in a -B directory: a planted one must never be used.
    let preinit = stubs.join("libtsan_preinit.o");
    std::os::unix::fs::chown(&preinit, Some(NOBODY), Some(NOBODY)).unwrap();
    let o = cc(&cache, &scratch().join("gcc-stubs-p2"))
        .env("LINEUP_CC", "gcc")
        .output()
        .unwrap();
    assert_refused(&o, &preinit, &[&format!("owned by uid {NOBODY}")]);
    std::os::unix::fs::chown(&preinit, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&stubs, std::fs::Permissions::from_mode(0o770)).unwrap();
    let o = cc(&cache, &scratch().join("gcc-stubs-p3"))
        .env("LINEUP_CC", "gcc")
        .output()
        .unwrap();
    assert_refused(&o, &stubs, &["writable by its group", "mode 0770"]);
}

#[test]
fn an_unprivileged_user_is_refused_a_cache_owned_by_root() {
    if !is_root() {
        return;
    }
    // Root's cache (0755: nobody can read it, not write it), with a good runtime in it.
    let f = Foreign::new("nobody", NOBODY);
    let cache = f.base.join("cache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o755)).unwrap();
    for e in std::fs::read_dir(populated()).unwrap() {
        let e = e.unwrap();
        let to = cache.join(e.file_name());
        std::fs::copy(e.path(), &to).unwrap();
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let o = f.cc(NOBODY, &[("LINEUP_CACHE_DIR", &cache)]);
    assert_refused(
        &o,
        &cache,
        &["owned by uid 0 (root)", &format!("uid {NOBODY}")],
    );
    assert!(!f.work().join("p").exists(), "nothing linked");
}
