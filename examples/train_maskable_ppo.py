import gymnasium as gym
import hsched_env  # noqa: F401  registers hsched/Schedule-v0 and hsched/Rank-v0
from sb3_contrib import MaskablePPO

env = gym.make("hsched/Schedule-v0", cluster="sia-64", workload="gavel:rate=4,jobs=50")
model = MaskablePPO("MultiInputPolicy", env, n_steps=512, tensorboard_log="runs/schedule-ppo")
model.learn(total_timesteps=2_048, progress_bar=True)
obs, info = env.reset(seed=123)
terminated = truncated = False
while not (terminated or truncated):
    action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(), deterministic=True)
    obs, reward, terminated, truncated, info = env.step(action)
print(f"avg JCT {info['metrics']['avg_jct_s'] / 3600:.2f} h over {info['metrics']['jobs_completed']} jobs")
