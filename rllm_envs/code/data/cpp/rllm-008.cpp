#include <iostream>
#include <string>
#include <utility>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int r, c;
    std::cin >> r >> c;
    std::vector<std::string> g(r);
    for (auto& row : g) std::cin >> row;
    const int dx[4] = {1, -1, 0, 0};
    const int dy[4] = {0, 0, 1, -1};
    int count = 0;
    std::vector<std::pair<int, int>> stack;
    for (int i = 0; i < r; ++i) {
        for (int j = 0; j < c; ++j) {
            if (g[i][j] != '#') continue;
            ++count;
            g[i][j] = '.';
            stack.assign(1, {i, j});
            while (!stack.empty()) {
                auto [x, y] = stack.back();
                stack.pop_back();
                for (int d = 0; d < 4; ++d) {
                    int nx = x + dx[d], ny = y + dy[d];
                    if (nx >= 0 && nx < r && ny >= 0 && ny < c && g[nx][ny] == '#') {
                        g[nx][ny] = '.';
                        stack.push_back({nx, ny});
                    }
                }
            }
        }
    }
    std::cout << count << '\n';
    return 0;
}
