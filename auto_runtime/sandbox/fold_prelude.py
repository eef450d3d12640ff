"""The guest side of folding (recall): a loop that folds one event at a time, in the snapshot beside the others.

`FOLD_DEFINITION` is defined in the snapshot after the prelude's setup (the collector off, the import guard, the
refused builtins, the writer: `prelude.py`); a folding sandbox executes `FOLD_ENTRY`. `_fold_serve` asks the
bridge for `program` (the module, its first line and the names of its `where` functions), loads it once, and
then asks `next` for each event the host wants looked at. An answer to `next` is empty (the page is over) or three
lines: a header `[where indices, taken without them,
bytes the view needs]`, the view's JSON, and the event's JSON. Each `where` call and the fold are bracketed by
`start` and `end` (the host sets and reads the call's fuel); an event no `where` takes is reported with `skip`,
a folded view is sent with `view` in the writer's wire form. Anything that ends the page early is the `result`:

`S` the host stopped the page; `F` the heap has not 64 MiB free beyond what the view needs (the host goes on in
a fresh sandbox); `R` and `M` as in the computation prelude (the fold raised, or raised `MemoryError`); `A` a
call allocated more than 64 MiB; `L`, `W`, `D`, `H` as the writer gives them for the view.

Allocation is measured by where the heap's next block lies (the address of a one-byte probe) before and after a
call: nothing is collected, so the heap fills from its start, and counting its allocated blocks (`gc.mem_free`)
costs tens of milliseconds, once per sandbox, to know where the heap ends.
"""

from __future__ import annotations

FOLD_DEFINITION = r"""
_mem_free = gc.mem_free
_bytearray = bytearray
_ROOM = 64 * 1024 * 1024
_VIEW_LIMIT = 524288


def _frontier():
    return _id(_bytearray(1))


def _taken_by(function, data):
    return True if function(data) else False


def _ask(function, first, second):
    before = _frontier()
    _call("start", "")
    try:
        value = function(first, second)
        failure = None
    except _BaseException as error:
        value = None
        failure = error
    _call("end", "")
    return value, failure, _frontier() - before > _ROOM


def _fold_serve():
    request = _loads(_call("program", ""))
    names = {"__name__": "program"}
    _program_names[0] = names
    try:
        _exec(_compile("\n" * (request["first_line"] - 1) + request["source"], "program", "exec"), names)
        fold = names["fold"]
        wheres = [names[name] for name in request["wheres"]]
    except _BaseException as error:
        _reserve.clear()
        return "E" + _report_raised(error)
    heap_end = _frontier() + _mem_free()
    while True:
        job = _call("next", "")
        if not job:
            return "S"
        head_end = job.find("\n")
        view_end = job.find("\n", head_end + 1)
        head = _loads(job[:head_end])
        if heap_end - _frontier() < _ROOM + head[2]:
            return "F"
        event_text = job[view_end + 1 :]
        taken = head[1]
        for index in head[0]:
            event = _loads(event_text)
            value, failure, grew = _ask(_taken_by, wheres[index], event.get("data"))
            if _type(failure) is _MemoryError or grew:
                _reserve.clear()
                return "A" if failure is None else _report_raised(failure)
            if failure is None and value:
                taken = True
                break
        if not taken:
            _call("skip", "")
            continue
        view = _loads(job[head_end + 1 : view_end])
        value, failure, grew = _ask(fold, view, _loads(event_text))
        if failure is not None:
            _reserve.clear()
            return _report_raised(failure)
        if grew:
            return "A"
        try:
            written = _write(value, _VIEW_LIMIT)
        except _MemoryError:
            _reserve.clear()
            return "H"
        if _type(written) is not bytes or written[:1] != b"O":
            return written
        _call("view", written)

"""

FOLD_ENTRY = '_call("result", _fold_serve())'
"""What a folding sandbox executes in a fresh instance of the snapshot."""
