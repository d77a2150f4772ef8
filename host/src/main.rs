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
///
/// glibc also gives threads arenas of their own, up to eight per core, and
/// a busy host has many threads (the async workers, and the blocking pool
/// that password hashes, plugin calls and file reads run on): each arena
/// kept its own free memory, so the resident size after a load grew with
/// the number of threads that had been busy at once. One arena per two
/// cores holds it (docs/performance.md, "Third round, measured");
/// `MALLOC_ARENA_MAX` in the environment, which glibc reads itself, still
/// decides when an operator sets it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn return_large_blocks() {
    let arenas = std::env::var_os("MALLOC_ARENA_MAX")
        .is_none()
        .then(|| std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1)));
    // SAFETY: mallopt only sets a parameter of the allocator; it runs first
    // in main, before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        if let Some(n) = arenas {
            libc::mallopt(libc::M_ARENA_MAX, n as libc::c_int);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn return_large_blocks() {}
