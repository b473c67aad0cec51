"""Hostile: allocates and touches memory without end on its first move (expected: MEMORY_LIMIT)."""


class Player:
    def __init__(self, train_mode=False):
        self.hoard = []

    def start(self, state, valid_actions):
        while True:
            block = bytearray(16 * 1024 * 1024)
            for i in range(0, len(block), 4096):
                block[i] = 1
            self.hoard.append(block)

    def step(self, state, valid_actions, prev_reward):
        return self.start(state, valid_actions)

    def end(self, state, prev_reward):
        pass
