import CLibevent

// The C functions libevent calls back: each recovers the worker (or connection) from its context
// pointer, which the worker passes unretained; the server keeps every worker alive until its
// thread has returned.

func worker(_ context: UnsafeMutableRawPointer?) -> Worker {
    Unmanaged<Worker>.fromOpaque(context!).takeUnretainedValue()
}

func workerHandleRequest(_ request: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    guard let request else { return }
    worker(context).handle(request)
}

func workerMakeBufferevent(_ base: OpaquePointer?, _ context: UnsafeMutableRawPointer?) -> OpaquePointer? {
    worker(context).makeBufferevent()
}

func workerConnectionClosed(_ connection: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    guard let connection else { return }
    worker(context).connectionClosed(connection)
}

func workerResponseCompleted(_ request: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    guard let request else { return }
    worker(context).responseCompleted(request)
}

func connectionResponseCompleted(_ request: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    guard request != nil, let context else { return }
    let connection = Unmanaged<Connection>.fromOpaque(context).takeUnretainedValue()
    connection.worker.responseCompleted(on: connection)
}

func workerSweep(_ fd: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    worker(context).sweep()
}

func workerWakeup(_ fd: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    worker(context).wokenUp()
}

func workerSoon(_ fd: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    worker(context).runSoon()
}

func workerInputAdded(_ buffer: OpaquePointer?, _ info: UnsafePointer<evbuffer_cb_info>?, _ context: UnsafeMutableRawPointer?) {
    guard let buffer, let info, let context else { return }
    let connection = Unmanaged<Connection>.fromOpaque(context).takeUnretainedValue()
    connection.worker.inputAdded(connection, buffer: buffer, added: info.pointee.n_added)
}

func connectionHeadersParsed(_ request: OpaquePointer?, _ context: UnsafeMutableRawPointer?) -> Int32 {
    guard let request, let context else { return 0 }
    let connection = Unmanaged<Connection>.fromOpaque(context).takeUnretainedValue()
    connection.worker.headersParsed(request, on: connection)
    return 0
}

func connectionRequestArrived(_ request: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    guard let request, let context else { return }
    let connection = Unmanaged<Connection>.fromOpaque(context).takeUnretainedValue()
    connection.worker.requestArrived(request, on: connection)
}
