#include <iostream>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    const int MOD = 1000000007;
    int k, S;
    std::cin >> k >> S;
    std::vector<int> ways(S + 1, 0);
    ways[0] = 1;
    for (int i = 0; i < k; ++i) {
        int c;
        std::cin >> c;
        for (int s = c; s <= S; ++s) {
            ways[s] += ways[s - c];
            if (ways[s] >= MOD) ways[s] -= MOD;
        }
    }
    std::cout << ways[S] << '\n';
    return 0;
}
