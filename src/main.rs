fn main() -> std::process::ExitCode {
    tune_allocator();
    icetrim::internals::shell::main()
}

/// glibc's allocator keeps the memory freed on each thread in that thread's arena (up to eight
/// arenas per core) and raises its trim and mmap thresholds as large buffers come and go (up to
/// 32 and 64 MiB), so a process that decodes and encodes Parquet on several threads holds
/// several times the memory it uses at once. The command-line program caps the arenas at two and
/// fixes the thresholds (buffers of 256 KiB and more are mapped and unmapped; free memory above
/// 1 MiB at the top of a heap is returned), so that `iceberg_compaction_max_memory_bytes` bounds
/// its resident memory. Programs that embed the library choose their own allocator.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_allocator() {
    // SAFETY: mallopt only sets allocator parameters; called first thing, before any thread.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 10);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_allocator() {}
