//! The matrix file: cases and loads for `lineup bench --matrix FILE` (TOML), like the seeds'
//! `process-pipe 1..8 groups`. No I/O: [`parse`] takes the file's text.
//!
//! ```toml
//! title = "hackbench"                 # the table's title (default: the file's name)
//! parser = "hackbench"                # or regex = "Time: ([0-9.]+)" with higher_is_better
//! runs = 8                            # per side; --runs wins over it
//! warmup = 1                          # per side; --warmup wins over it
//! load_label = "{load}-groups"        # how a load is shown in the table (default "{load}")
//! a = "hackbench {mode} -g {load} -l 2000"                 # templates every case may use
//! b = "taskset -c 0 hackbench {mode} -g {load} -l 2000"
//!
//! [[case]]
//! name = "process-pipe"
//! loads = [1, 2, 4, 8]
//! vars = { mode = "-p" }              # more {placeholders} for this case's commands
//!
//! [[case]]
//! name = "threads-sockets"
//! loads = [1, 2, 4, 8]
//! a = "hackbench -T -g {load} -l 2000"   # a case may give its own commands and parser
//! b = "./hackbench-new -T -g {load} -l 2000"
//! ```
//!
//! In a command, `{load}`, `{case}` and each `vars` key are replaced; other braces (shell
//! `${X}`, awk) are left alone.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::Setup;
use super::parsers::{Direction, Parser};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    title: Option<String>,
    parser: Option<String>,
    regex: Option<String>,
    higher_is_better: Option<bool>,
    runs: Option<usize>,
    warmup: Option<usize>,
    timeout: Option<f64>,
    load_label: Option<String>,
    a: Option<String>,
    b: Option<String>,
    #[serde(default)]
    vars: BTreeMap<String, String>,
    #[serde(rename = "case", default)]
    cases: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    loads: Option<Vec<toml::Value>>,
    load_label: Option<String>,
    a: Option<String>,
    b: Option<String>,
    parser: Option<String>,
    regex: Option<String>,
    higher_is_better: Option<bool>,
    #[serde(default)]
    vars: BTreeMap<String, String>,
}

/// A matrix file, resolved.
#[derive(Debug)]
pub struct Matrix {
    pub title: Option<String>,
    pub runs: Option<usize>,
    pub warmup: Option<usize>,
    pub timeout: Option<f64>,
    pub setups: Vec<Setup>,
}

/// Reads a matrix file's text. `default_parser` is the command line's `--parser`/`--regex`,
/// used by cases for which the file names none. Errors are one line, without the file name.
pub fn parse(text: &str, default_parser: Option<&Parser>) -> Result<Matrix, String> {
    let file: File =
        toml::from_str(text).map_err(|e| crate::profile::text::toml_error(text, &e))?;
    if file.cases.is_empty() {
        return Err("no [[case]] (each case needs a name, loads and commands a and b)".into());
    }
    // Ranges before anything is sized by them.
    if let Some(runs) = file.runs {
        super::limits::check_runs(runs, "runs =")?;
    }
    if let Some(warmup) = file.warmup {
        super::limits::check_warmup(warmup, "warmup =")?;
    }
    if let Some(t) = file.timeout {
        super::limits::check_timeout(t, "timeout =")?;
    }
    let file_parser = parser_from(
        file.parser.as_deref(),
        file.regex.as_deref(),
        file.higher_is_better,
        "the file",
    )?;
    let mut setups = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for case in &file.cases {
        if case.name.trim().is_empty() || case.name.contains(char::is_whitespace) {
            return Err(format!(
                "case '{}': a case name must be one word (it is the table's first column)",
                case.name
            ));
        }
        if !seen.insert(case.name.clone()) {
            return Err(format!("case '{}' appears twice", case.name));
        }
        let who = format!("case '{}'", case.name);
        let parser = match parser_from(
            case.parser.as_deref(),
            case.regex.as_deref(),
            case.higher_is_better,
            &who,
        )? {
            Some(p) => p,
            None => file_parser
                .clone()
                .or_else(|| default_parser.cloned())
                .unwrap_or(Parser::Wall),
        };
        let a = case.a.as_ref().or(file.a.as_ref());
        let b = case.b.as_ref().or(file.b.as_ref());
        let (Some(a), Some(b)) = (a, b) else {
            return Err(format!(
                "{who} has no command {} (give a and b in the case or at the top of the file)",
                if a.is_none() { "a" } else { "b" }
            ));
        };
        let loads: Vec<String> = match &case.loads {
            None => vec!["-".to_string()],
            Some(v) if v.is_empty() => return Err(format!("{who}: loads is empty")),
            Some(v) => v
                .iter()
                .map(|l| match l {
                    toml::Value::Integer(i) => Ok(i.to_string()),
                    toml::Value::Float(f) => Ok(f.to_string()),
                    toml::Value::String(s) => Ok(s.clone()),
                    other => Err(format!(
                        "{who}: a load must be a number or a string, not {}",
                        other.type_str()
                    )),
                })
                .collect::<Result<_, _>>()?,
        };
        let label = case
            .load_label
            .as_deref()
            .or(file.load_label.as_deref())
            .unwrap_or("{load}");
        let mut vars = file.vars.clone();
        vars.extend(case.vars.clone());
        for load in loads {
            let mut subst = vars.clone();
            subst.insert("load".into(), load.clone());
            subst.insert("case".into(), case.name.clone());
            let load_label = fill(label, &subst);
            if load_label.contains(char::is_whitespace) {
                return Err(format!(
                    "{who}: load label '{load_label}' has a space (it is the table's second column)"
                ));
            }
            setups.push(Setup {
                case: case.name.clone(),
                load: load_label,
                a: fill(a, &subst),
                b: fill(b, &subst),
                parser: parser.clone(),
            });
        }
    }
    Ok(Matrix {
        title: file.title,
        runs: file.runs,
        warmup: file.warmup,
        timeout: file.timeout,
        setups,
    })
}

fn parser_from(
    name: Option<&str>,
    regex: Option<&str>,
    higher: Option<bool>,
    who: &str,
) -> Result<Option<Parser>, String> {
    match (name, regex) {
        (Some(_), Some(_)) => Err(format!("{who} gives both parser and regex; give one")),
        (Some(n), None) => Parser::by_name(n).map(Some).ok_or_else(|| {
            format!(
                "{who}: unknown parser '{n}' (known: {})",
                super::parsers::PARSERS
                    .iter()
                    .map(|p| p.0)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }),
        (None, Some(re)) => {
            let direction = match higher {
                Some(true) => Direction::HigherIsBetter,
                Some(false) => Direction::LowerIsBetter,
                None => {
                    return Err(format!(
                        "{who}: a regex needs higher_is_better = true or false"
                    ));
                }
            };
            Parser::regex(re, direction)
                .map(Some)
                .map_err(|e| format!("{who}: {e}"))
        }
        (None, None) => Ok(None),
    }
}

/// Replaces `{key}` for each key of `vars`; leaves every other brace alone.
pub fn fill(template: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = template.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HACKBENCH: &str = r#"
title = "hackbench"
parser = "hackbench"
runs = 4
load_label = "{load}-groups"
a = "hackbench {mode} -g {load} -l 200"
b = "taskset -c 0 hackbench {mode} -g {load} -l 200 | awk '{print}' ${X}"

[[case]]
name = "process-pipe"
loads = [1, 2]
vars = { mode = "-p" }

[[case]]
name = "threads-sockets"
loads = ["8"]
vars = { mode = "-T" }
regex = "Time: ([0-9.]+)"
higher_is_better = false
"#;

    #[test]
    fn cases_times_loads_with_substitution() {
        let m = parse(HACKBENCH, None).unwrap();
        assert_eq!(m.title.as_deref(), Some("hackbench"));
        assert_eq!(m.runs, Some(4));
        let rows: Vec<(&str, &str, &str)> = m
            .setups
            .iter()
            .map(|s| (s.case.as_str(), s.load.as_str(), s.a.as_str()))
            .collect();
        assert_eq!(
            rows,
            [
                ("process-pipe", "1-groups", "hackbench -p -g 1 -l 200"),
                ("process-pipe", "2-groups", "hackbench -p -g 2 -l 200"),
                ("threads-sockets", "8-groups", "hackbench -T -g 8 -l 200"),
            ]
        );
        // Other braces are the shell's.
        assert_eq!(
            m.setups[0].b,
            "taskset -c 0 hackbench -p -g 1 -l 200 | awk '{print}' ${X}"
        );
        assert_eq!(m.setups[0].parser.name(), "hackbench");
        assert_eq!(m.setups[2].parser.name(), "regex");
    }

    #[test]
    fn defaults_and_command_line_parser() {
        let text = "[[case]]\nname = \"x\"\na = \"true\"\nb = \"true\"\n";
        let m = parse(text, None).unwrap();
        assert_eq!(m.setups.len(), 1);
        assert_eq!(m.setups[0].load, "-");
        assert_eq!(m.setups[0].parser.name(), "wall");
        let m = parse(text, Some(&Parser::Hackbench)).unwrap();
        assert_eq!(m.setups[0].parser.name(), "hackbench");
    }

    #[test]
    fn errors_are_one_line_and_name_the_case() {
        let cases = [
            ("title = 3\n", "line 1"),
            ("", "no [[case]]"),
            (
                "[[case]]\nname = \"x\"\na = \"true\"\n",
                "case 'x' has no command b",
            ),
            (
                "[[case]]\nname = \"x\"\na = \"1\"\nb = \"2\"\nparser = \"nope\"\n",
                "unknown parser 'nope'",
            ),
            (
                "[[case]]\nname = \"x\"\na = \"1\"\nb = \"2\"\nregex = \"(x)\"\n",
                "needs higher_is_better",
            ),
            (
                "[[case]]\nname = \"x\"\na = \"1\"\nb = \"2\"\n[[case]]\nname = \"x\"\na = \"1\"\nb = \"2\"\n",
                "appears twice",
            ),
            (
                "[[case]]\nname = \"two words\"\na = \"1\"\nb = \"2\"\n",
                "one word",
            ),
            ("[[case]]\nname = \"x\"\nload = [1]\n", "unknown field"),
            (
                "runs = 100000000000\n[[case]]\nname = \"x\"\na = \"1\"\nb = \"2\"\n",
                "runs = 100000000000: at most 10000 runs per side",
            ),
            (
                "warmup = 5000\n[[case]]\nname = \"x\"\na = \"1\"\nb = \"2\"\n",
                "warmup = 5000: at most 1000 warm-up runs",
            ),
            (
                "timeout = 1e300\n[[case]]\nname = \"x\"\na = \"1\"\nb = \"2\"\n",
                "timeout = 1e300: give seconds",
            ),
            (
                "runs = -1\n[[case]]\nname = \"x\"\na = \"1\"\nb = \"2\"\n",
                "line 1",
            ),
            (
                "[[case]]\nname = \"x\"\na = \"1\"\nb = \"2\"\nloads = [true]\n",
                "not boolean",
            ),
        ];
        for (text, want) in cases {
            let e = parse(text, None).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e:?}");
        }
    }
}
