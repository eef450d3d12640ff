-- Number 3 is reserved for another change being built beside this one; this step changes nothing, so that the
-- numbers run 1, 2, ... without a gap until that change takes its place (drop this file when it does).
SELECT 1;
