//! The `lineup` binary: a thin command line over the `lineup` library.

mod cli;

// Layouts allocate many small vectors; mimalloc makes `layout --all` markedly faster.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(cli::main());
}
