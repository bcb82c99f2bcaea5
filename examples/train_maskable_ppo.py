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
