print("longthread-stress: work in progress")
