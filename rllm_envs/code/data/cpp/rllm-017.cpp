#include <iostream>
#include <string>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int r, c;
    std::cin >> r >> c;
    std::vector<std::string> g(r);
    for (auto& row : g) std::cin >> row;
    std::string out;
    out.reserve(static_cast<std::size_t>(c) * (r + 1));
    for (int j = 0; j < c; ++j) {
        for (int i = r - 1; i >= 0; --i) out += g[i][j];
        out += '\n';
    }
    std::cout << out;
    return 0;
}
