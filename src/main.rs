//! The `lineup` binary: a thin command line over the `lineup` library.

mod cli;

fn main() {
    std::process::exit(cli::main());
}
