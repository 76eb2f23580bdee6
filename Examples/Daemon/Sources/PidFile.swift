import CLibBSD
import Glibc

/// libbsd's pidfile(3): `pidfile_open` creates and locks the file (a second instance finds it
/// locked and learns the running pid), `pidfile_write` writes our pid once we are ready,
/// `pidfile_remove` unlinks it at exit. The lock dies with the process, so a crash leaves no
/// stale lock.
struct PidFile: ~Copyable {
    private let handle: OpaquePointer?

    init(_ path: String?) throws(DaemonError) {
        guard let path else {
            handle = nil
            return
        }
        var running: pid_t = 0
        guard let handle = pidfile_open(path, 0o644, &running) else {
            if errno == EEXIST { throw .alreadyRunning(pid: running > 0 ? running : nil, pidfile: path) }
            throw .system("cannot open pidfile \(path)", errno: errno)
        }
        self.handle = handle
    }

    func write() {
        if let handle { pidfile_write(handle) }
    }

    func remove() {
        if let handle { pidfile_remove(handle) }
    }
}
