print("longthread-daemon: work in progress")
