//! What the host asks of glibc's allocator at run time (the parameters it
//! sets at start are in `main.rs`).

/// Gives the allocator's free pages back to the system. glibc keeps memory
/// freed below blocks still in use, so a large structure built once and
/// dropped (the API's OpenAPI description, some 26 MB of schemas) stayed
/// resident for the life of the process (docs/performance.md, "Idle
/// memory"). Called after such a structure is dropped, never per request.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn return_freed() {
    // SAFETY: malloc_trim only gives free pages of the allocator's arenas
    // back to the system; it is thread-safe and touches no block in use.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn return_freed() {}
