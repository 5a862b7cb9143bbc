# How deeprm_reference.json was made (see tests/data/README.md). Python 2.7: this script runs
# DeepRM's own code (hongzimao/deeprm at fa78411: environment.py, other_agents.py,
# job_distribution.py, parameters.py and slow_down_cdf.py, unmodified, on PYTHONPATH with numpy
# 1.16.6 and empty stand-ins for theano, matplotlib.pyplot and pg_network, which the heuristics
# never use) the way slow_down_cdf.launch runs it without a trained model, and records every job.
#
#   python2 run_deeprm_py2.py OUT.json SIMU_LEN NUM_EX EPISODE_MAX_LENGTH SEED RATE...
#
# Nothing here is imported by the test suite.
import json
import sys

import numpy as np

import environment
import parameters
import slow_down_cdf

out_json = sys.argv[1]
simu_len, num_ex, eps_max, seed = [int(x) for x in sys.argv[2:6]]
rates = [float(r) for r in sys.argv[6:]]
NAMES = {'Tetris': 'packer', 'SJF': 'sjf', 'Random': 'random'}  # the script's Tetris is Packer

rows = []
for rate in rates:
    pa = parameters.Parameters()  # slow_down_cdf.main's settings, with ours where they differ
    pa.simu_len = simu_len
    pa.num_ex = num_ex
    pa.num_nw = 10
    pa.num_seq_per_batch = 20
    pa.new_job_rate = rate
    pa.discount = 1
    pa.episode_max_length = eps_max
    pa.compute_dependent_parameters()
    pa.unseen = (seed == 314159)  # the script's switch to its unseen jobsets (seed 314159)
    env = environment.Env(pa, render=False, repre='image', end='all_done',
                          seed=42 if pa.unseen else seed)
    test_types = ['Tetris', 'SJF', 'Random']  # launch()'s order: Random's draws follow theirs
    jobs = dict((t, []) for t in test_types)
    unallocated = dict((t, 0) for t in test_types)
    capped = dict((t, 0) for t in test_types)
    for seq_idx in range(pa.num_ex):  # launch()'s loop, without its plot
        for test_type in test_types:
            rews, info = slow_down_cdf.get_traj(test_type, pa, env, pa.episode_max_length)
            for i in range(len(info.record)):
                job = info.record[i]
                if job.finish_time >= 0:
                    jobs[test_type].append((job.enter_time, job.finish_time, job.len))
                else:
                    unallocated[test_type] += 1
            if len(rews) >= pa.episode_max_length:
                capped[test_type] += 1
        env.seq_no = (env.seq_no + 1) % env.pa.num_ex
    shown = int((env.nw_len_seqs[:, 1:] > 0).sum())  # a jobset's step 0 is never injected
    for t in test_types:
        enter, finish, length = [np.array(c, dtype=np.int64) for c in zip(*jobs[t])]
        rows.append({
            'seed': seed, 'simu_len': simu_len, 'jobsets': num_ex, 'rate': rate,
            'episode_max_length': eps_max, 'policy': NAMES[t],
            # pooled over every finished job, in the order the script lists them
            'slowdown': float(np.mean((finish - enter).astype(np.float64) / length)),
            # what the script's own line computes under Python 2: int / int floors
            'slowdown_py2': float(np.mean((finish - enter) / length)),
            'completion': float(np.mean(finish - enter)),
            'jobs': len(enter), 'unfinished': unallocated[t],
            'dropped': shown - len(enter) - unallocated[t],
            'episodes_at_cap': capped[t]})
    sys.stderr.write('rate %g done\n' % rate)

with open(out_json, 'w') as f:
    json.dump(rows, f, indent=1, sort_keys=True)
