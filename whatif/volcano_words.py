"""Volcano's message on a PodGroup that does not run, in the words of the rest of the report.

The gang plugin writes `<n>/<m> tasks in gang unschedulable: <fit error>` on the PodGroup's
Unschedulable condition (`plugins/gang/gang.go`, v1.15.1), the fit error being the job's
`pod group is not ready, <k> Pending, <j> minAvailable; Pending: <count> <reason>, ...`
(`JobInfo.FitError`, `api/job_info.go`), each pending pod counted by its scheduling reason
(`TaskSchedulingReason`: `Unschedulable` found no node, `Schedulable` could be placed once the
gang can, `Undetermined` was not tried). A message of another form is not translated; the report
then quotes it.
"""

from __future__ import annotations

import re

_GANG = re.compile(r"^(\d+)/(\d+) tasks in gang unschedulable: (.*)$", re.S)
_PENDING = re.compile(r"Pending: ((?:\d+ \w+(?:, )?)+)")
_COUNT = re.compile(r"(\d+) (\w+)")

POD_REASONS = {
    "Unschedulable": "{n} found no node with room",
    "Schedulable": "{n} would fit once the whole gang does",
    "Undetermined": "{n} were not tried once the gang could not be completed",
}
"""Pod scheduling reasons (`api/types.go`: `PodReasonUnschedulable`, `PodReasonSchedulable`,
`PodReasonUndetermined`) as the report says them."""


def translate(message: str) -> str | None:
    """The sentence for a gang plugin message, or None for a message of another form."""
    found = _GANG.match(message.strip())
    if found is None:
        return None
    short, total, detail = int(found.group(1)), int(found.group(2)), found.group(3)
    text = f"{short} of its {total} pods cannot be placed at once"
    pending = _PENDING.search(detail)
    if pending is not None:
        parts = [
            POD_REASONS[reason].format(n=count)
            for count, reason in _COUNT.findall(pending.group(1))
            if reason in POD_REASONS
        ]
        if parts:
            text += " (" + "; ".join(parts) + ")"
    return text
