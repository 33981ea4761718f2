"""MaxText's fit check (`make fit-check`): compile a job's train step for its TPU slices on this CPU, judge its HBM,
read the compiled step's work for preflight's forecast, and cache each verdict under a key this code is part of."""
