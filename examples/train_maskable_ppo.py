"""Train sb3-contrib's MaskablePPO (MultiInputPolicy, its mask from env.action_masks()) on
hsched/Schedule-Tiny-v0 for 4,096 steps, then run one held-out episode (seed 1,000,000)
deterministically with the mask and print its average JCT. TensorBoard logs go to
runs/schedule-tiny-ppo/ under the current directory. It takes no options; the shipped
hyper-parameter entry (agents/hyperparams/maskable_ppo_mlp.yml) trains 40,000 steps with
'hsched train --env hsched/Schedule-Tiny-v0 --policy mlp'.

    OMP_NUM_THREADS=1 .venv/bin/python examples/train_maskable_ppo.py
"""
import argparse

argparse.ArgumentParser(description=__doc__,                     # --help prints the above
                        formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()

import gymnasium as gym
import hsched_env  # noqa: F401  registers hsched/Schedule-v0, hsched/Rank-v0 and their -Tiny/-Small/-Medium/-Large-v0 levels
from sb3_contrib import MaskablePPO

env = gym.make("hsched/Schedule-Tiny-v0")   # the documented configuration: agents/hyperparams/maskable_ppo_mlp.yml
model = MaskablePPO("MultiInputPolicy", env, n_steps=1024, batch_size=128, gamma=0.99,
                    tensorboard_log="runs/schedule-tiny-ppo")
model.learn(total_timesteps=4_096, progress_bar=True)   # the shipped entry trains 40,000 steps
obs, info = env.reset(seed=1_000_000)                    # a held-out seed
terminated = truncated = False
while not (terminated or truncated):
    action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(), deterministic=True)
    obs, reward, terminated, truncated, info = env.step(action)
print(f"avg JCT {info['metrics']['avg_jct_s'] / 3600:.2f} h over {info['metrics']['jobs_completed']} jobs")
