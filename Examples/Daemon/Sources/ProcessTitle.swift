import CLibBSD
import Glibc

/// The process title that `ps` and `/proc/PID/cmdline` show, through libbsd's setproctitle(3).
///
/// setproctitle(3) is not thread-safe: the daemon sets the title from its journal thread only.
enum ProcessTitle {
    /// argv[0] and its original length, recorded by ``prepare()``.
    nonisolated(unsafe) private static var argument0: (base: UnsafeMutablePointer<CChar>, length: Int)?

    /// Lets setproctitle(3) reuse argv's memory (it moves the environment away first). Call once,
    /// at start, before any thread reads argv or the environment by pointer; ArgumentParser has
    /// copied the arguments out already.
    static func prepare() {
        if let base = CommandLine.unsafeArgv[0] { argument0 = (base, strlen(base)) }
        setproctitle_init(CommandLine.argc, CommandLine.unsafeArgv, environ)
    }

    /// Shows `longthread-daemon: <title>`. One thread at a time (the journal's).
    static func set(_ title: String) {
        CLibBSD_setproctitle(title)
        // libbsd marks a title shorter than the original argv[0] by writing '.' over argv[0]'s
        // old terminator, meant for a process started without arguments (where that byte ends
        // the argument area and tells the kernel the title was changed). With arguments it just
        // shows up: started by absolute path (a long argv[0]), `ps` reads "title         ." So
        // the terminator is put back: the rest of the area is zeroed, and the title reads whole.
        if let (base, length) = argument0, strlen(base) < length, base[length] == CChar(UInt8(ascii: ".")) {
            base[length] = 0
        }
    }
}
