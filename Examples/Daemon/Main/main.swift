import DaemonExample

Daemon.main()
