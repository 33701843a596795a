//! The command line: argument parsing and wiring, nothing else.

mod bench;
mod calibrate;
mod check;
mod diagnose;
mod diff;
mod evidence;
#[cfg(feature = "fleet")]
mod fleet;
mod layout;
mod optimize;
mod output;
mod predict;
mod record;
mod replay;
mod report_files;
mod scalar;
mod source;
mod subject;
mod typing;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "lineup",
    version,
    about = "Find and fix cache-line contention in C data structures",
    long_about = "lineup walks the loop kernel and performance engineers run by hand: measure \
                  contention, attribute it to struct fields, fix the layout, prove the fix.",
    after_help = "Example:\n  lineup layout task_group          # from the running kernel's BTF\n  \
                  lineup layout --dwarf ./prog --all --json\n  \
                  lineup bench --a ./old --b ./new --regex 'elapsed: ([0-9.]+)' --lower-is-better\n  \
                  lineup cc -O2 -pthread prog.c -o prog && lineup record -o p.json -- ./prog\n  \
                  lineup diagnose --type stats --dwarf ./prog --profile p.json"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Layout(layout::Args),
    Import(evidence::ImportArgs),
    Diagnose(diagnose::Args),
    Optimize(optimize::Args),
    Predict(predict::Args),
    Replay(replay::Args),
    Bench(bench::Args),
    Calibrate(calibrate::Args),
    Cc(record::CcArgs),
    #[command(name = "c++")]
    Cxx(record::CxxArgs),
    Record(record::RecordArgs),
    Check(check::Args),
    Diff(diff::Args),
    Typing(typing::Args),
    #[cfg(feature = "fleet")]
    Fleet(fleet::Args),
}

/// Runs the command line and returns the process exit code: 0 on success (`check` and `diff`:
/// 1 when the layout breaks its contract or the layouts differ), 2 on any error,
/// which is printed as one line naming the file and the problem; `bench` stopped by Ctrl-C
/// and `replay` stopped by Ctrl-C return 130 after printing the table of their finished runs.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    let result = match cli.command {
        Command::Layout(args) => layout::run(args).map(|()| 0),
        Command::Import(args) => evidence::run_import(args).map(|()| 0),
        Command::Diagnose(args) => diagnose::run(args).map(|()| 0),
        Command::Optimize(args) => optimize::run(args).map(|()| 0),
        Command::Predict(args) => predict::run(args).map(|()| 0),
        Command::Replay(args) => replay::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Calibrate(args) => calibrate::run(args).map(|()| 0),
        // These pass on the compiler's or the recorded program's exit status.
        Command::Cc(args) => record::run_cc(args),
        Command::Cxx(args) => record::run_cxx(args),
        Command::Record(args) => record::run_record(args),
        // 1 when the layout breaks its contract, as linters do.
        Command::Check(args) => check::run(args),
        // 0 same, 1 different, as diff(1) and codiff.
        Command::Diff(args) => diff::run(args),
        Command::Typing(args) => typing::run(args).map(|()| 0),
        // 0 same, 1 different for `fleet compare`, as diff(1).
        #[cfg(feature = "fleet")]
        Command::Fleet(args) => fleet::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // A closed pipe (`lineup layout --all | head`) is not an error worth a message.
            if let Some(io) = e.downcast_ref::<std::io::Error>()
                && io.kind() == std::io::ErrorKind::BrokenPipe
            {
                return 0;
            }
            eprintln!("lineup: {e:#}");
            2
        }
    }
}
