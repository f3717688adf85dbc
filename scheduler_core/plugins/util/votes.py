"""A plugin's vote on a job (enqueueable, pipelined, ...), as upstream's plugins/util Permit/Abstain/Reject.

The framework combines the votes tier by tier (framework.callbacks): a reject says no at once, a
permit decides yes at the end of its tier, abstaining passes on.
"""

PERMIT, ABSTAIN, REJECT = 1, 0, -1
