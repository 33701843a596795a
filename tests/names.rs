//! Types C code names only through a typedef (`typedef struct { ... } lreg_args;`, the form
//! Phoenix's linear_regression uses for its per-thread arguments) are found by that name.

mod common;

use std::process::Command;

use common::lineup;

#[test]
fn anonymous_struct_behind_a_typedef_is_found_by_the_typedef_name() {
    let dir = std::env::temp_dir().join(format!("lineup-names-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("lreg.c");
    std::fs::write(
        &src,
        "typedef struct {\n  long long SX, SY, SXX, SYY, SXY;\n  int tid;\n  char *points;\n} lreg_args;\n\
         typedef struct named_tag { int a; } named_t;\n\
         lreg_args *args_for_threads;\nnamed_t one;\n",
    )
    .unwrap();
    let obj = dir.join("lreg.o");
    let cc = Command::new("cc")
        .args(["-g", "-c", "-o"])
        .arg(&obj)
        .arg(&src)
        .status()
        .unwrap();
    assert!(cc.success());
    let o = obj.to_str().unwrap();
    let v = common::lineup_json(&["layout", "--dwarf", o, "lreg_args", "--json"]);
    let t = &v["types"][0];
    assert_eq!(t["name"], "lreg_args");
    // Five long longs, an int (+4 hole), a pointer: 56 bytes, as the compiler laid it out.
    assert_eq!(t["size"], 56);
    let names: Vec<&str> = t["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["SX", "SY", "SXX", "SYY", "SXY", "tid", "points"]);
    // A typedef of a named struct finds the struct; the struct's own name still works.
    for n in ["named_t", "named_tag"] {
        let v = common::lineup_json(&["layout", "--dwarf", o, n, "--json"]);
        assert_eq!(v["types"][0]["name"], "named_tag", "{n}");
    }
    let out = lineup(&["layout", "--dwarf", o, "no_such_t"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn headers_declare_structs_as_cxx_classes_and_behind_typedefs() {
    use lineup::readers::c_struct::find_struct;
    let cxx =
        "namespace q {\nclass Ring : public Base {\n public:\n  long head;\n  long tail;\n};\n}\n";
    let s = find_struct(cxx, "Ring").expect("a C++ class");
    let names: Vec<String> = s.members().into_iter().map(|(n, _)| n).collect();
    assert!(
        names.ends_with(&["head".to_string(), "tail".to_string()]),
        "{names:?}"
    );
    let td = "/* args */\ntypedef struct {\n  long long SX;\n  int tid;\n} lreg_args;\n";
    let s = find_struct(td, "lreg_args").expect("a typedef'd anonymous struct");
    let names: Vec<String> = s.members().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["SX", "tid"]);
    assert!(find_struct(td, "lreg").is_err());
}
