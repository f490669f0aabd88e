module github.com/taskd/taskd/bench/peers/peerout

go 1.26.7
