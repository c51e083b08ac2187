"""The hostile-client suite (hostile.py) as one test of make test-serve:
every case must pass; the table is printed (pytest -s shows it) and
written to $RS_HOSTILE_TABLE when that is set.  Named to run after
test_serve.py, whose latency measurements (test_overhead) its floods
would disturb."""
import os

import hostile


def test_hostile_clients(tmp_path):
    argv = ["--table", os.environ["RS_HOSTILE_TABLE"]] if os.environ.get("RS_HOSTILE_TABLE") \
        else []
    rows = hostile.main(argv, log_dir=str(tmp_path))
    failed = [r for r in rows if not r[3]]
    assert not failed, hostile.table(rows)
