fn main() -> std::process::ExitCode {
    return_large_blocks();
    match postern::cli::main() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("postern: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// glibc's malloc keeps a freed large block in the arena it came from, and
/// raises the size it leaves to mmap (up to 32 MiB) each time such a block
/// is freed. An argon2id hash's 19 MiB and the other large buffers of a
/// busy host then stayed resident arena after arena: a mixed load of 200
/// clients left the process at 1.7 GB instead of 80 MB, and slower, for
/// the page cache it took. Blocks of 1 MiB and more now come from mmap and
/// go back to the system when freed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn return_large_blocks() {
    // SAFETY: mallopt only sets a parameter of the allocator; it runs first
    // in main, before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn return_large_blocks() {}
