//! The JSON Schema validator of the `--json` tests (tests/json_schema.rs, tests/fleet.rs): the
//! small subset of JSON Schema draft 2020-12 the schema files in docs/schema/ use (`type`,
//! `const`, `enum`, `required`, `properties`, `additionalProperties`, `items`, `pattern`); it
//! refuses any other keyword, so a schema cannot quietly say more than is checked.

use serde_json::Value;

pub fn schema(name: &str) -> Value {
    let path = super::repo().join(format!("docs/schema/{name}.schema.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let s: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        s["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "{name}"
    );
    s
}

fn type_ok(want: &str, v: &Value) -> bool {
    match want {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.is_u64() || v.is_i64(),
        other => panic!("unknown type {other:?} in a schema"),
    }
}

/// Every way `v` breaks schema `s`, as "path: what".
pub fn validate(s: &Value, v: &Value, path: &str, errs: &mut Vec<String>) {
    let s = s.as_object().expect("a schema is an object");
    for key in s.keys() {
        assert!(
            matches!(
                key.as_str(),
                "$schema"
                    | "$id"
                    | "title"
                    | "description"
                    | "type"
                    | "const"
                    | "enum"
                    | "required"
                    | "properties"
                    | "additionalProperties"
                    | "items"
                    | "pattern"
            ),
            "{path}: keyword {key:?} is not checked by this validator"
        );
    }
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_ok(t.as_str().unwrap(), v)),
            _ => panic!("{path}: bad type"),
        };
        if !ok {
            errs.push(format!("{path}: {v} is not of type {t}"));
            return;
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            errs.push(format!("{path}: {v} is not {c}"));
        }
    }
    if let (Some(p), Some(text)) = (s.get("pattern"), v.as_str()) {
        let re = regex::Regex::new(p.as_str().expect("a pattern is a string")).unwrap();
        if !re.is_match(text) {
            errs.push(format!("{path}: {v} does not match {p}"));
        }
    }
    if let Some(e) = s.get("enum") {
        if !e.as_array().unwrap().contains(v) {
            errs.push(format!("{path}: {v} is not one of {e}"));
        }
    }
    if let Some(o) = v.as_object() {
        for r in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let r = r.as_str().unwrap();
            if !o.contains_key(r) {
                errs.push(format!("{path}: required field {r:?} is missing"));
            }
        }
        let props = s.get("properties").and_then(Value::as_object);
        for (k, x) in o {
            let sub = format!("{path}.{k}");
            match props.and_then(|p| p.get(k)) {
                Some(ps) => validate(ps, x, &sub, errs),
                None => {
                    if let Some(ap) = s.get("additionalProperties") {
                        validate(ap, x, &sub, errs);
                    }
                }
            }
        }
    }
    if let (Some(items), Some(a)) = (s.get("items"), v.as_array()) {
        for (i, x) in a.iter().enumerate() {
            validate(items, x, &format!("{path}[{i}]"), errs);
        }
    }
}

/// Every way `v` breaks docs/schema/`name`.schema.json, as "path: what".
pub fn errors(name: &str, v: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    validate(&schema(name), v, "$", &mut errs);
    errs
}
