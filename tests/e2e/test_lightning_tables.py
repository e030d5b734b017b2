"""PyTorch Lightning's results table, printed by trainer.test() and trainer.validate(), read
as metrics (DECISION-lightning.md, docs/result-json.md). The experiments print the bytes
Lightning 2.x's `_print_results` (src/lightning/pytorch/loops/evaluation_loop.py) prints:
with rich importable, rich's default box (HEAVY_HEAD) around columns of width 25 centred;
without it, rules of '─' as wide as the terminal (120 when stdout is no terminal) around
lines of `"{:^W}" * n` cells, stripped on the right. Lightning is not installed here, so the
lines are printed as they are (rendered once with rich itself)."""
import pytest

from conftest import run_exp, write_exp

# What a Lightning script prints before its table: tqdm's epoch bars, fit's last line.
PROGRESS = r'''
import sys
for ep in range(2):
    for i in range(1, 4):
        sys.stdout.write(f"\rEpoch {ep}: {i*33}%|███▎      | {i}/3 [00:00<00:00, 30.0it/s, v_num=0, train_loss=0.{9-ep*3-i}]")
        sys.stdout.flush()
    sys.stdout.write(f"\rEpoch {ep}: 100%|██████████| 3/3 [00:00<00:00, 30.0it/s, v_num=0, train_loss=0.{5-ep}, val_loss=0.{6-ep}, val_acc=0.{7+ep}]\n")
print("`Trainer.fit` stopped: `max_epochs=2` reached.")
'''

RICH_TEST = '''\
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃        Test metric        ┃       DataLoader 0        ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│         test_acc          │    0.8812000155448914     │
│         test_loss         │    0.3345000147819519     │
└───────────────────────────┴───────────────────────────┘
'''

# The plain layout: the header's cells are 25 wide, so "Test metric" has 7 blanks before it.
PLAIN_TEST = '''\
BAR
       Test metric             DataLoader 0
BAR
        test_acc            0.8812000155448914
        test_loss           0.3345000147819519
BAR
'''

# trainer.validate() with two dataloaders: a metric the second one logged alone has a blank
# cell under DataLoader 0.
RICH_TWO = '''\
┏━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃     Validate metric     ┃      DataLoader 0       ┃       DataLoader 1       ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│         ood_auc         │                         │           0.7            │
│         val_acc         │          0.91           │           0.62           │
│        val_loss         │          0.25           │           1.5            │
└─────────────────────────┴─────────────────────────┴──────────────────────────┘
'''

PLAIN_TWO = '''\
BAR
     Validate metric           DataLoader 0             DataLoader 1
BAR
         ood_auc                                             0.7
         val_acc                   0.91                     0.62
        val_loss                   0.25                      1.5
BAR
'''

# The same as rich prints it on a terminal (FORCE_COLOR): bold header, coloured cells.
RICH_TWO_COLOUR = (
    '┏━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━┓\n'
    '┃\x1b[1m \x1b[0m\x1b[1m    Validate metric    \x1b[0m\x1b[1m \x1b[0m┃\x1b[1m \x1b[0m\x1b[1m     '
    'DataLoader 0      \x1b[0m\x1b[1m \x1b[0m┃\x1b[1m \x1b[0m\x1b[1m      DataLoader 1      '
    '\x1b[0m\x1b[1m \x1b[0m┃\n'
    '┡━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━┩\n'
    '│\x1b[36m \x1b[0m\x1b[36m        ood_auc        \x1b[0m\x1b[36m \x1b[0m│\x1b[35m \x1b[0m\x1b[35m     '
    '                  \x1b[0m\x1b[35m \x1b[0m│\x1b[35m \x1b[0m\x1b[35m          0.7           '
    '\x1b[0m\x1b[35m \x1b[0m│\n'
    '│\x1b[36m \x1b[0m\x1b[36m        val_acc        \x1b[0m\x1b[36m \x1b[0m│\x1b[35m \x1b[0m\x1b[35m     '
    '    0.91          \x1b[0m\x1b[35m \x1b[0m│\x1b[35m \x1b[0m\x1b[35m          0.62          '
    '\x1b[0m\x1b[35m \x1b[0m│\n'
    '│\x1b[36m \x1b[0m\x1b[36m       val_loss        \x1b[0m\x1b[36m \x1b[0m│\x1b[35m \x1b[0m\x1b[35m     '
    '    0.25          \x1b[0m\x1b[35m \x1b[0m│\x1b[35m \x1b[0m\x1b[35m          1.5           '
    '\x1b[0m\x1b[35m \x1b[0m│\n'
    '└─────────────────────────┴─────────────────────────┴──────────────────────────┘\n')

# Four dataloaders: Lightning prints three columns a table (its width 120 over 25), then
# the fourth in a table of its own headed "DataLoader 3".
RICH_FOUR = '''\
┏━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━┓
┃    Test metric    ┃   DataLoader 0    ┃   DataLoader 1    ┃   DataLoader 2   ┃
┡━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━┩
│     test_acc      │        0.5        │        0.6        │       0.7        │
└───────────────────┴───────────────────┴───────────────────┴──────────────────┘
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃        Test metric        ┃       DataLoader 3        ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│         test_acc          │            0.8            │
└───────────────────────────┴───────────────────────────┘
'''

PLAIN_FOUR = '''\
BAR
       Test metric             DataLoader 0             DataLoader 1             DataLoader 2
BAR
        test_acc                    0.5                      0.6                      0.7
BAR
BAR
       Test metric             DataLoader 3
BAR
        test_acc                    0.8
BAR
'''

# Cells that are no number: a tensor's list (rich wraps it, plain overflows its column),
# a name rich cut short with "…" (a name over 36 characters no longer fits 80 columns).
RICH_ODD = '''\
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃             Test metric              ┃             DataLoader 0              ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│ test/per_class_accuracy/a_rather_lo… │                  0.5                  │
│               test_acc               │                 0.75                  │
│                 vec                  │ [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7,   │
│                                      │       0.8, 0.9, 1.0, 1.1, 1.2]        │
│               test_mae               │                  12                   │
└──────────────────────────────────────┴───────────────────────────────────────┘
'''

# Without rich a name longer than half the terminal goes on in the next line, cut at 60
# (the column's width) with its values on the first line.
PLAIN_ODD = '''\
BAR
                        Test metric                                                 DataLoader 0
BAR
a_name_that_is_longer_than_half_the_terminal_width_of_120_ch                            0.25
                            ars
                          test_acc                                                      0.75
                            vec                                      [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.1]
                          test_mae                                                       12
BAR
'''


def exp_printing(tmp_path, *tables, bar="─", before=PROGRESS):
    text = "".join(tables).replace("BAR", bar * 120)
    return write_exp(tmp_path, before + f"\nsys.stdout.write({text!r})\n")


def run_printing(tmp_path, *tables, **kw):
    return run_exp(exp_printing(tmp_path, *tables, **kw), tmp_path / "runs")


@pytest.mark.parametrize("table,bar", [(RICH_TEST, "─"), (PLAIN_TEST, "─"), (PLAIN_TEST, "-")],
                         ids=["rich", "plain", "plain-ascii"])
def test_lightning_test_table_is_read(tmp_path, table, bar):
    r = run_printing(tmp_path, table, bar=bar)
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed"
    assert r.result["metrics"]["values"] == {"test_acc": 0.8812000155448914,
                                             "test_loss": 0.3345000147819519}, r.why()
    assert r.result["metric_issues"] == []


@pytest.mark.parametrize("table", [RICH_TWO, PLAIN_TWO, RICH_TWO_COLOUR],
                         ids=["rich", "plain", "rich-colour"])
def test_each_dataloader_after_the_first_gets_lightnings_suffix(tmp_path, table):
    r = run_printing(tmp_path, table)
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {
        "val_acc": 0.91, "val_loss": 0.25,
        "val_acc/dataloader_idx_1": 0.62, "val_loss/dataloader_idx_1": 1.5,
        "ood_auc/dataloader_idx_1": 0.7}, r.why()


@pytest.mark.parametrize("table", [RICH_FOUR, PLAIN_FOUR], ids=["rich", "plain"])
def test_a_table_split_over_several_keeps_each_columns_dataloader(tmp_path, table):
    r = run_printing(tmp_path, table)
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {
        "test_acc": 0.5, "test_acc/dataloader_idx_1": 0.6, "test_acc/dataloader_idx_2": 0.7,
        "test_acc/dataloader_idx_3": 0.8}, r.why()


@pytest.mark.parametrize("table", [RICH_TEST, PLAIN_TEST], ids=["rich", "plain"])
def test_a_second_trainer_test_replaces_the_first(tmp_path, table):
    second = table.replace("0.8812000155448914", "0.9012000155448914")
    r = run_printing(tmp_path, table, "Testing DataLoader 0: 100%|██████████| 2/2\n", second)
    assert r.rc == 0, r.why()
    m = r.result["metrics"]
    assert m["values"]["test_acc"] == 0.9012000155448914, r.why()
    assert {x["metric"]: x["seen"] for x in m["repeats"]} == {"test_acc": 2, "test_loss": 2}


def test_cells_that_are_no_number_or_cut_short_are_not_read(tmp_path):
    r = run_printing(tmp_path, RICH_ODD)
    assert r.rc == 0, r.why()
    # Not `test/per_class_accuracy/a_rather_lo…`, nor `vec`: rich's cut name is no name.
    assert r.result["metrics"]["values"] == {"test_acc": 0.75, "test_mae": 12}, r.why()


def test_a_name_wrapped_onto_the_next_line_is_read_whole(tmp_path):
    r = run_printing(tmp_path, PLAIN_ODD)
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {
        "a_name_that_is_longer_than_half_the_terminal_width_of_120_chars": 0.25,
        "test_acc": 0.75, "test_mae": 12}, r.why()


def test_a_nan_in_the_table_is_flagged_as_a_printed_nan_is(tmp_path):
    r = run_printing(tmp_path, RICH_TEST.replace("0.8812000155448914", "       nan        "))
    assert r.rc == 4, r.why()
    assert r.result["status"] == "invalid_metrics"
    assert r.result["metrics"]["values"]["test_acc"] == "NaN"


@pytest.mark.parametrize("text", [
    # two columns of prose or a log's own table between rules: no Lightning header
    "BAR\n    epoch         loss\nBAR\n      1           0.52\n      2           0.41\nBAR\n",
    "BAR\n       Test accuracy           DataLoader 0\nBAR\n        test_acc            0.88\nBAR\n",
    # Lightning's rows without the header above them
    "        test_acc            0.8812000155448914\n        test_loss           0.33\n",
    "BAR\n        test_acc            0.8812000155448914\nBAR\n",
    # the header, but not between rules
    "       Test metric             DataLoader 0\n        test_acc            0.88\n",
    "BAR\n       Test metric             DataLoader 0\n        test_acc            0.88\nBAR\n",
    # the header, but not centred where Lightning centres it
    "BAR\nTest metric DataLoader 0\nBAR\ntest_acc 0.88\nBAR\n",
    # rich's box around another table
    "┏━━━━━━━┳━━━━━━┓\n┃ Model ┃ Acc  ┃\n┡━━━━━━━╇━━━━━━┩\n│ ours  │ 0.91 │\n└───────┴──────┘\n",
    # a rich row without the header
    "│         test_acc          │    0.8812000155448914     │\n",
], ids=["prose", "other-header", "rows-alone", "rows-between-rules", "header-no-rules",
        "header-one-rule", "not-centred", "rich-other-header", "rich-row-alone"])
def test_two_columns_without_lightnings_header_are_not_read(tmp_path, text):
    r = run_printing(tmp_path, text, before="import sys\n")
    assert r.rc == 4, r.why()
    assert r.result["status"] == "invalid_metrics"
    assert r.result["metrics"]["values"] == {}, r.why()


def test_rules_and_boxes_are_never_metrics_and_lines_around_them_still_are(tmp_path):
    r = run_printing(tmp_path, "acc: 0.5\n", RICH_TEST, "| bleu | 27.3 |\n", PLAIN_TEST,
                  "loss: 0.1\n", before="import sys\n")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {
        "acc": 0.5, "bleu": 27.3, "loss": 0.1,
        "test_acc": 0.8812000155448914, "test_loss": 0.3345000147819519}, r.why()
    assert "repeats" in r.result["metrics"]  # test_acc and test_loss, twice each
